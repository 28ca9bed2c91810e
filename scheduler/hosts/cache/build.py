"""A host state from its row, its claims and its row's decoding."""

import datetime
import types
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import NamedTuple
from typing import Protocol

from scheduler.db.host_queries import AllocationRow
from scheduler.db.host_queries import NodeRow
from scheduler.hosts import history as history_mod
from scheduler.hosts.cache import decode
from scheduler.hosts.host_list import DeferredHost
from scheduler.hosts.state import HostState
from scheduler.hosts.state import Metric

_new_object = object.__new__


def _state_of(fields: dict) -> HostState:
    """A ``HostState`` of ``fields`` (every field, as ``HostState()``
    would set them), without its keyword ``__init__``: states are built
    per changed row and claim."""
    state = _new_object(HostState)
    state.__dict__ = fields
    return state


class ClaimedUsage(Protocol):
    """A claim as ``HostManager.record_claim`` reads it: what it takes on
    its node, and the node's generation and change time as the claim left
    them (None when the call that returned it did not make it).
    ``scheduler.claims.Claim`` is one; the host cache, below the claims,
    names only what it reads."""

    @property
    def node_id(self) -> int: ...

    @property
    def generation(self) -> int | None: ...

    @property
    def changed_at(self) -> datetime.datetime | None: ...

    @property
    def instance_uuid(self) -> str: ...

    @property
    def vcpus(self) -> int: ...

    @property
    def memory_mb(self) -> int: ...

    @property
    def disk_gb(self) -> int: ...

    @property
    def group(self) -> str | None: ...


class Entry(NamedTuple):
    #: A report-only change's state is built when first read.
    state: "HostState | ReportedHost"
    decoded: decode.Decoded
    #: The row as ``kept_row`` keeps it, which the state was built from
    #: (``built_from()``): also what the cache's bookkeeping reads the
    #: node's names and change key from, so that a deferred state stays
    #: unbuilt.
    row: NodeRow
    #: The node's claims the state counts.
    claims: tuple[AllocationRow, ...]
    #: The configured allocation ratios (cpu, ram, disk) it was built
    #: with.
    ratios: tuple[float, float, float]

    def built_from(self) -> tuple:
        """What the state was built from, to tell on a full load whether
        anything changed: ``(row, claims, ratios)``."""
        return self[2:]


_new_tuple = tuple.__new__


def new_entry(fields: tuple["HostState | ReportedHost", decode.Decoded,
                            NodeRow, tuple[AllocationRow, ...],
                            tuple[float, float, float]]) -> Entry:
    """``Entry(*fields)`` without the Python-level ``__new__`` of a named
    tuple: one is made per changed row."""
    return _new_tuple(Entry, fields)


_METRICS = NodeRow._fields.index("metrics")
_CPU_INFO = NodeRow._fields.index("cpu_info")
_NETWORKS = NodeRow._fields.index("networks")
_INSTANCE_METRICS = NodeRow._fields.index("instance_metrics")
#: The columns after the metrics that a report leaves as they were.
_DISABLED = slice(NodeRow._fields.index("disabled"),
                  NodeRow._fields.index("disabled_reason") + 1)


def kept_row(row: NodeRow, decoded: decode.Decoded | None = None
             ) -> NodeRow:
    """``row`` as the cache keeps it: its metrics and instance entries'
    texts as their ``decode.metrics_key`` (the decoding holds what was
    read from them); ``decoded``: the row's decoding, when already
    worked out, whose keys and (equal) description texts are taken."""
    # A list patched in place: a third cheaper than joining slices, and
    # one is kept per changed row.
    fields = list(row)
    if decoded is None:
        fields[_METRICS] = decode.metrics_key(row.metrics)
        fields[_INSTANCE_METRICS] = decode.instances_key(
            row.instance_metrics)
    else:
        fields[_METRICS] = decoded.metrics_key
        fields[_INSTANCE_METRICS] = decoded.instances_key
        # The decoding's texts (equal to the row's), kept since it
        # first read them, rather than this read's copies: one object
        # per host, not two.
        fields[_CPU_INFO] = decoded.cpu_info_text
        fields[_NETWORKS] = decoded.networks_text
    return _new_tuple(NodeRow, fields)


def reusable_decoding(entry: Entry, kept: NodeRow) -> decode.Decoded | None:
    """The cached decoding of a row whose JSON columns did not change;
    ``kept``: the row as ``kept_row`` keeps it (its metrics and instance
    entries as their ``metrics_key``).

    The columns are compared (the metrics by ``metrics_key``), not the
    change key: a full load is the safety net for a writer that changed
    a row without moving its key.
    """
    decoded = entry.decoded
    if (decoded.metrics_key != kept.metrics
            or decoded.cpu_info_text != kept.cpu_info
            or decoded.networks_text != kept.networks
            or decoded.instances_key != kept.instance_metrics):
        return None
    return decoded


class ReportedHost(DeferredHost):
    """The host state of a node whose changes since the cache last built
    its state were metrics reports alone, built when first read
    (``HostList``): most are replaced by the node's next report before
    anything reads them. Holds what building it takes: the newest row
    as the cache keeps it (``light``, whose fields of ``LIGHT`` are the
    state's), its decoding, the claims, the share of a pending claim's
    vCPUs assumed busy (``[metrics] expected_instance_cpu``), and the
    base: the last state built (without its report once handed down
    twice: ``_without_report``), of which a report sets the report's
    fields."""

    __slots__ = ("_decoded", "_base", "_claims", "pending_cpu_fraction")

    def base(self) -> HostState:
        """A state of this node with the same row and claims: what the
        claims' sums and sets are read from (the state once built)."""
        base = self._base  # read first: cleared only once built
        return self._state if base is None else base

    def built(self) -> HostState:
        state = super().built()
        # The base is not kept alive beside the state.
        self._base = None
        return state

    def _build(self) -> HostState:
        """A copy of the base with the report's fields set: a state of
        38 fields costs a fifth of building one anew."""
        base = self._base
        if base is None:  # built meanwhile, by another thread
            return self._state
        row, decoded = self.light, self._decoded
        reported = row.metrics_updated_at
        fields = base.__dict__.copy()
        # No claim the base's report predated, and this one is no older:
        # none is pending still, without a pass over every claim the
        # node holds.
        before = fields["metrics_updated_at"]
        if (fields["claims_pending"] or before is None or reported is None
                or reported < before):
            (fields["claims_pending"], fields["vcpus_pending"],
             fields["memory_mb_pending"]) = _pending(self._claims, reported)
        fields["cpu_info"] = decoded.cpu_info
        fields["networks"] = decoded.networks
        fields["metrics"] = decoded.metrics
        fields["bad_metrics"] = decoded.bad_metrics
        fields["instance_metrics"] = decoded.instance_metrics
        fields["metric_history"] = decoded.history
        fields["instance_history"] = decoded.instance_history
        fields["updated_at"] = row.updated_at
        fields["metrics_updated_at"] = reported
        fields["generation"] = row.generation
        fields["changed_at"] = row.changed_at
        fields["pending_cpu_fraction"] = self.pending_cpu_fraction
        return _state_of(fields)


_NO_METRICS: Mapping[str, Metric] = types.MappingProxyType({})
#: A state's fields that hold its report's values, emptied in a base.
_NO_REPORT = {"metrics": _NO_METRICS,
              "bad_metrics": frozenset(),
              "instance_metrics": _NO_METRICS,
              "metric_history": history_mod.EMPTY,
              "instance_history": history_mod.EMPTY}


def _without_report(state: HostState) -> HostState:
    """``state`` without its report's values: a deferred state's base
    keeps no older report history alive."""
    fields = state.__dict__.copy()
    fields.update(_NO_REPORT)
    return _state_of(fields)


def base_state(host: HostState | ReportedHost) -> HostState:
    """A state of the node of ``host`` with the same row and claims (not
    necessarily its report): what the claims' sums and sets are read
    from."""
    return host.base() if type(host) is ReportedHost else host


def reported_host(row: NodeRow, kept: NodeRow, decoded: decode.Decoded,
                  previous: Entry, ratios: tuple[float, float, float],
                  pending_cpu_fraction: float) -> ReportedHost | None:
    """The host of ``row`` (``kept``: as ``kept_row`` keeps it) when a
    metrics report was its one change since ``previous`` (its claims are
    still the cached ones), its state built when first read; None when
    more than the report changed."""
    held, claims, held_ratios = previous.row, previous.claims, previous.ratios
    if (row[:_METRICS] != held[:_METRICS] or ratios != held_ratios
            or row[_DISABLED] != held[_DISABLED]):
        return None
    state = previous.state
    base = state
    if type(state) is ReportedHost:
        base = state._base  # read first: cleared only once built
        if base is None:
            base = state._state
        elif base.metrics is not _NO_METRICS:
            # Handed down a second time: the older report, and its
            # history, are not kept alive for long.
            base = _without_report(base)
    # Without the Python-level __init__: one is made per report.
    host = _new_object(ReportedHost)
    host._state = None
    host.light = kept
    host._decoded = decoded
    host._base = base
    host._claims = claims
    host.pending_cpu_fraction = pending_cpu_fraction
    return host


def claimed_state(state: HostState, claim: AllocationRow,
                  generation: int) -> HostState:
    """``state`` with one more claim (``claim``, on an instance it does
    not hold yet) taken in at ``generation`` and the claim's time: what
    ``build_state`` makes of the node's row and claims then, without a
    pass over every claim the node holds (one claim is taken in per
    decision)."""
    fields = state.__dict__.copy()
    fields["vcpus_claimed"] += claim.vcpus
    fields["memory_mb_claimed"] += claim.memory_mb
    fields["disk_gb_claimed"] += claim.disk_gb
    fields["instances"] = {*state.instances, claim.instance_uuid}
    if claim.instance_group:
        fields["instance_groups"] = {*state.instance_groups,
                                     claim.instance_group}
    else:
        fields["instance_groups"] = set(state.instance_groups)
    fields["instance_flavors"] = {
        **state.instance_flavors,
        claim.instance_uuid: (claim.vcpus, claim.memory_mb)}
    reported = state.metrics_updated_at
    if reported is None or claim.created_at >= reported:
        fields["claims_pending"] += 1
        fields["vcpus_pending"] += claim.vcpus
        fields["memory_mb_pending"] += claim.memory_mb
    fields["generation"] = generation
    fields["changed_at"] = claim.created_at
    return _state_of(fields)


def build_state(row: NodeRow,
                allocations: Sequence[AllocationRow],
                decoded: decode.Decoded,
                ratios: tuple[float, float, float],
                same_claims: HostState | None = None,
                pending_cpu_fraction: float = 1.0) -> HostState:
    """The host state of ``row`` holding ``allocations``.

    ``same_claims``: the cached state of the row, built from these very
    allocations (a report was the only change): its sums and sets are
    taken over, and only which claims are pending is worked out again.
    ``pending_cpu_fraction``: ``HostState.pending_cpu_fraction``.
    """
    reported = row.metrics_updated_at
    if same_claims is not None:
        # Cached states are never changed, only replaced: shared.
        vcpus, memory_mb, disk_gb, instances, groups, flavors = (
            same_claims.vcpus_claimed, same_claims.memory_mb_claimed,
            same_claims.disk_gb_claimed, same_claims.instances,
            same_claims.instance_groups, same_claims.instance_flavors)
    else:
        vcpus, memory_mb, disk_gb, instances, groups, flavors = _held(
            allocations)
    claims_pending, vcpus_pending, memory_mb_pending = _pending(
        allocations, reported)
    cpu_ratio, ram_ratio, disk_ratio = ratios
    # Every field, as HostState() would set them, at a third of the cost
    # of its keyword __init__: one state is built per changed row.
    return _state_of({
        "node_id": row.id, "uuid": row.uuid, "host": row.host,
        "nodename": row.hypervisor_hostname, "cluster": row.cluster,
        "availability_zone": row.availability_zone, "vcpus": row.vcpus,
        "memory_mb": row.memory_mb, "disk_gb": row.local_gb,
        "cpu_allocation_ratio": _ratio(row.cpu_allocation_ratio,
                                       cpu_ratio),
        "ram_allocation_ratio": _ratio(row.ram_allocation_ratio,
                                       ram_ratio),
        "disk_allocation_ratio": _ratio(row.disk_allocation_ratio,
                                        disk_ratio),
        "vcpus_claimed": vcpus, "memory_mb_claimed": memory_mb,
        "disk_gb_claimed": disk_gb, "claims_pending": claims_pending,
        "vcpus_pending": vcpus_pending,
        "memory_mb_pending": memory_mb_pending,
        "cpu_info": decoded.cpu_info, "networks": decoded.networks,
        "metrics": decoded.metrics, "bad_metrics": decoded.bad_metrics,
        "instance_metrics": decoded.instance_metrics,
        "metric_history": decoded.history,
        "instance_history": decoded.instance_history,
        "disabled": bool(row.disabled),
        "disabled_reason": row.disabled_reason,
        "updated_at": row.updated_at, "metrics_updated_at": reported,
        "generation": row.generation, "changed_at": row.changed_at,
        "instances": instances, "instance_groups": groups,
        "instance_flavors": flavors,
        "pending_cpu_fraction": pending_cpu_fraction})


def _held(allocations: Sequence[AllocationRow]
          ) -> tuple[int, int, int, set[str], set[str],
                     dict[str, tuple[int, int]]]:
    """vCPUs, MiB and GB the claims hold, their instances, groups and
    the flavor key (vCPUs, MiB) of each instance."""
    vcpus = memory_mb = disk_gb = 0
    groups: set[str] = set()
    flavors: dict[str, tuple[int, int]] = {}
    for allocation in allocations:
        vcpus += allocation.vcpus
        memory_mb += allocation.memory_mb
        disk_gb += allocation.disk_gb
        flavors[allocation.instance_uuid] = (allocation.vcpus,
                                             allocation.memory_mb)
        if allocation.instance_group:
            groups.add(allocation.instance_group)
    return vcpus, memory_mb, disk_gb, set(flavors), groups, flavors


def _pending(allocations: Sequence[AllocationRow],
             reported: datetime.datetime | None) -> tuple[int, int, int]:
    """How many claims the report ``reported`` predates, and their vCPUs
    and MiB: a node that never reported has no claim in its metrics yet,
    nor has a report stamped the very instant the claim was made."""
    count = vcpus = memory_mb = 0
    for allocation in allocations:
        if reported is None or allocation.created_at >= reported:
            count += 1
            vcpus += allocation.vcpus
            memory_mb += allocation.memory_mb
    return count, vcpus, memory_mb


def _ratio(own: float | None, default: float) -> float:
    return default if own is None else own


def claims_by_node(allocations: Iterable[AllocationRow]
             ) -> dict[int, list[AllocationRow]]:
    grouped: dict[int, list[AllocationRow]] = {}
    for allocation in allocations:
        grouped.setdefault(allocation.compute_node_id, []).append(allocation)
    return grouped
