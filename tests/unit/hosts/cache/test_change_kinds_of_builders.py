"""What the host cache's own builders move, for each kind of change, is
what ``change_kinds`` declares: a report alone (``reported_host``, built) and
a claim taken in (``claimed_state``, as ``HostManager.record_claim``
calls it, which is ``build_state`` with one claim more)."""

import datetime

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler.db.host_queries import AllocationRow
from scheduler.db.host_queries import NodeRow
from scheduler.hosts import change_kinds
from scheduler.hosts.cache import decode
from scheduler.hosts.cache.build import build_state
from scheduler.hosts.cache.build import claimed_state
from scheduler.hosts.cache.build import kept_row
from scheduler.hosts.cache.build import new_entry
from scheduler.hosts.cache.build import reported_host
from tests.unit.hosts.cache.fakes import SECOND
from tests.unit.hosts.cache.fakes import metrics_json

START = datetime.datetime(2026, 1, 1)
WINDOWS = (3600.0, 600.0)

allocations = st.lists(st.builds(
    AllocationRow, compute_node_id=st.just(1),
    instance_uuid=st.sampled_from(("i-1", "i-2", "i-3")),
    vcpus=st.integers(0, 8), memory_mb=st.integers(0, 4096),
    disk_gb=st.integers(0, 40),
    instance_group=st.sampled_from((None, "g1")),
    # Before and after the first report: pending claims on both sides.
    created_at=st.sampled_from((START - SECOND, START + 5 * SECOND))),
    max_size=3, unique_by=lambda allocation: allocation.instance_uuid)
values = st.floats(0, 100, allow_nan=False)
ratios = st.sampled_from((None, 1.0, 1.5))


def _row(cpu: float, ratio: float | None, disabled: bool) -> NodeRow:
    return NodeRow(
        id=1, uuid="uuid-1", host="h1", hypervisor_hostname="n1",
        cluster="c1", availability_zone="az1", vcpus=16, memory_mb=32768,
        local_gb=500, cpu_allocation_ratio=ratio, ram_allocation_ratio=ratio,
        disk_allocation_ratio=None, cpu_info='{"arch": "x86_64"}',
        networks='["net1"]', metrics=metrics_json(START, cpu_percent=cpu),
        metrics_updated_at=START, disabled=disabled, disabled_reason=None,
        generation=7, changed_at=START, updated_at=START)


def _moved(before, after) -> set[str]:
    return {name for name in change_kinds.ATTRIBUTES
            if getattr(before, name) != getattr(after, name)}


def _undeclared(moved: set[str], kind: str) -> set[str]:
    return {name for name in moved
            if kind not in change_kinds.ATTRIBUTES[name]}


@settings(max_examples=60, deadline=None)
@given(claims=allocations, first=values, second=values, ratio=ratios,
       disabled=st.booleans(), fraction=st.sampled_from((1.0, 0.5)),
       later=st.sampled_from((2, 10)))
def test_what_a_report_moves_is_declared(claims, first, second, ratio,
                                         disabled, fraction, later):
    row = _row(first, ratio, disabled)
    decoded = decode.decode(row, None, *WINDOWS)
    configured = (1.0, 1.0, 1.0)
    state = build_state(row, tuple(claims), decoded, configured,
                        pending_cpu_fraction=1.0)
    cached = new_entry((state, decoded, kept_row(row, decoded),
                        tuple(claims), configured))
    when = START + later * SECOND
    reported = row._replace(
        metrics=metrics_json(when, cpu_percent=second, memory_free=1.0),
        metrics_updated_at=when, changed_at=when, updated_at=when,
        generation=row.generation + 1)
    host = reported_host(reported, kept_row(reported),
                         decode.decode(reported, decoded, *WINDOWS),
                         cached, configured, fraction)
    assert host is not None
    after = host.built()
    assert _undeclared(_moved(state, after), change_kinds.REPORT) == set()


@settings(max_examples=60, deadline=None)
@given(claims=allocations, cpu=values, ratio=ratios, vcpus=st.integers(0, 4),
       group=st.sampled_from((None, "g1", "g2")))
def test_what_a_claim_taken_in_moves_is_declared(claims, cpu, ratio, vcpus,
                                                 group):
    row = _row(cpu, ratio, False)
    decoded = decode.decode(row, None, *WINDOWS)
    configured = (1.0, 1.0, 1.0)
    state = build_state(row, tuple(claims), decoded, configured,
                        pending_cpu_fraction=0.5)
    # As record_claim takes it in: the claim's generation and time.
    when = START + 3 * SECOND
    claimed = row._replace(generation=row.generation + 1, changed_at=when)
    taken = AllocationRow(1, "i-new", vcpus, 512, 10, group, when)
    after = claimed_state(state, taken, row.generation + 1)
    # What a refresh reading the node and its claims would build.
    assert after == build_state(
        claimed, (*claims, taken), decoded, configured,
        pending_cpu_fraction=state.pending_cpu_fraction)
    moved = _moved(state, after)
    assert {"generation", "changed_at", "instances"} <= moved
    assert _undeclared(moved, change_kinds.CLAIM) == set()
