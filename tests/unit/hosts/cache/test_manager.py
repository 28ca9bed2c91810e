"""scheduler.hosts.cache.manager.HostManager: full and incremental
refreshes of the host cache."""

import dataclasses
import datetime
import gc
import json
import logging
import math
import uuid

import orjson
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler.common import clock as scheduler_clock
from scheduler.db import host_queries
from scheduler.db import models
from scheduler.hosts import state as hs
from scheduler.hosts.cache import decode
from scheduler.hosts.cache.manager import HostManager
from scheduler.request.spec import RequestSpec
from tests import fakes

NODES = models.ComputeNode.__table__
ALLOCATIONS = models.Allocation.__table__
SECOND = datetime.timedelta(seconds=1)


def iso(moment: datetime.datetime) -> str:
    return moment.isoformat(timespec="microseconds") + "Z"


def metrics_json(moment: datetime.datetime, **values) -> str:
    """A metrics column as the agent writes it."""
    return json.dumps([{"name": name.replace("_", "."), "value": value,
                        "timestamp": iso(moment), "source": "test"}
                       for name, value in values.items()])


def add_node(engine, host: str, *, when: datetime.datetime | None = None,
             metrics: str | None = None, **values) -> int:
    when = when or models.utcnow()
    row = {
        "uuid": str(uuid.uuid4()), "host": host,
        "hypervisor_hostname": f"{host}.example.org", "cluster": "c1",
        "availability_zone": "nova", "vcpus": 8, "memory_mb": 16384,
        "local_gb": 100, "memory_mb_used": 2048, "local_gb_used": 10,
        "cpu_info": json.dumps({"arch": "x86_64"}),
        "networks": json.dumps(["physnet1"]),
        "metrics": metrics if metrics is not None else metrics_json(
            when, cpu_percent=10.0, memory_free=8 * 1024 ** 3),
        "metrics_updated_at": when, "disabled": False, "generation": 0,
        "changed_at": when, "created_at": when, "updated_at": when,
    }
    row.update(values)
    with engine.begin() as connection:
        return connection.execute(NODES.insert().values(**row)
                                  ).inserted_primary_key[0]


def update_node(engine, node_id: int, **values) -> None:
    values.setdefault("changed_at", models.utcnow())
    with engine.begin() as connection:
        connection.execute(NODES.update().where(NODES.c.id == node_id)
                           .values(**values))


def claim(engine, node_id: int, *, vcpus=1, memory_mb=512, disk_gb=10,
          group=None, when: datetime.datetime | None = None,
          bump: bool = True) -> str:
    """An allocation written the way claims are: with a key bump."""
    when = when or models.utcnow()
    instance = str(uuid.uuid4())
    with engine.begin() as connection:
        connection.execute(ALLOCATIONS.insert().values(
            uuid=str(uuid.uuid4()), instance_uuid=instance,
            compute_node_id=node_id, vcpus=vcpus, memory_mb=memory_mb,
            disk_gb=disk_gb, instance_group=group, created_at=when))
        if bump:
            connection.execute(NODES.update().where(NODES.c.id == node_id)
                               .values(generation=NODES.c.generation + 1,
                                       changed_at=when))
    return instance


def by_host(states) -> dict[str, hs.HostState]:
    return {state.host: state for state in states}


@pytest.fixture
def count_json(monkeypatch):
    """Counts the JSON documents parsed while the test runs (by orjson,
    or by msgspec for well-formed metrics)."""
    calls = []

    def counting(real):
        def parse(text, *args, **kwargs):
            calls.append(text)
            return real(text, *args, **kwargs)
        return parse

    monkeypatch.setattr(orjson, "loads", counting(orjson.loads))
    monkeypatch.setattr(decode, "_read_entries",
                        counting(decode._read_entries))
    return calls


# Full load


def test_full_load_builds_free_resources(conf, engine, manager):
    base = models.utcnow() - 60 * SECOND
    default = add_node(engine, "a", when=base)
    own = add_node(engine, "b", when=base, cpu_allocation_ratio=2.0,
                   ram_allocation_ratio=1.0, disk_allocation_ratio=3.0)
    add_node(engine, "c", when=base)
    first = claim(engine, default, vcpus=2, memory_mb=1024, disk_gb=20,
                  group="g1", when=base - SECOND)
    second = claim(engine, default, vcpus=1, memory_mb=512, disk_gb=5,
                   when=base - SECOND)
    claim(engine, own, vcpus=4, memory_mb=4096, disk_gb=50, group="g2",
          when=base - SECOND)

    hosts = by_host(manager.host_states())

    a, b, c = hosts["a"], hosts["b"], hosts["c"]
    # [filter_scheduler] defaults: cpu 16, ram 1.5, disk 1.0.
    assert (a.cpu_allocation_ratio, a.ram_allocation_ratio,
            a.disk_allocation_ratio) == (16.0, 1.5, 1.0)
    assert a.free_vcpus == 8 * 16 - 3
    assert a.free_ram_mb == 16384 * 1.5 - 1536
    assert a.free_disk_gb == 100 - 25
    assert a.instances == {first, second}
    assert a.instance_groups == {"g1"}
    assert (b.cpu_allocation_ratio, b.ram_allocation_ratio,
            b.disk_allocation_ratio) == (2.0, 1.0, 3.0)
    assert b.free_vcpus == 8 * 2 - 4
    assert b.free_ram_mb == 16384 - 4096
    assert b.free_disk_gb == 300 - 50
    assert b.instance_groups == {"g2"}
    assert c.free_vcpus == 128 and c.instances == set()
    assert a.nodename == "a.example.org" and a.disk_gb == 100
    assert a.cpu_info == {"arch": "x86_64"}
    assert a.networks == frozenset({"physnet1"})
    assert a.metrics["cpu.percent"] == hs.Metric(
        10.0, base.replace(tzinfo=None), "test")
    assert a.bad_metrics == frozenset()
    stats = manager.last_refresh
    assert stats.full and stats.rows_read == 3 and stats.rows_decoded == 3
    assert stats.allocations_read == 3 and stats.hosts == 3
    assert stats.duration >= 0


def test_conf_ratio_defaults_apply(conf, engine, manager):
    conf.set_override("cpu_allocation_ratio", 4.0, group="filter_scheduler")
    add_node(engine, "a")
    assert manager.host_states()[0].free_vcpus == 32


def test_pending_counts_only_claims_newer_than_the_report(engine, manager):
    report = models.utcnow() - 30 * SECOND
    node = add_node(engine, "a", when=report)
    claim(engine, node, vcpus=2, memory_mb=1000, when=report - SECOND)
    claim(engine, node, vcpus=1, memory_mb=300, when=report + SECOND)
    claim(engine, node, vcpus=4, memory_mb=200, when=report + 2 * SECOND)
    never = add_node(engine, "b", when=report, metrics="[]",
                     metrics_updated_at=None)
    claim(engine, never, vcpus=3, memory_mb=700, when=report)

    hosts = by_host(manager.host_states())

    assert hosts["a"].vcpus_claimed == 7
    assert hosts["a"].memory_mb_claimed == 1500
    assert (hosts["a"].claims_pending, hosts["a"].vcpus_pending,
            hosts["a"].memory_mb_pending) == (2, 5, 500)
    # No report yet: nothing is reflected in metrics.
    assert (hosts["b"].claims_pending, hosts["b"].vcpus_pending,
            hosts["b"].memory_mb_pending) == (1, 3, 700)


def test_report_after_the_claim_clears_pending(engine, manager):
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    claim(engine, node, vcpus=2, memory_mb=1024)
    assert manager.host_states()[0].vcpus_pending == 2
    now = models.utcnow()
    update_node(engine, node, metrics_updated_at=now, changed_at=now,
                metrics=metrics_json(now, memory_free=1.0))
    host = manager.host_states()[0]
    assert (host.vcpus_pending, host.memory_mb_pending) == (0, 0)
    assert host.vcpus_claimed == 2


def test_states_are_ordered_by_host_and_nodename(engine, manager):
    add_node(engine, "b")
    add_node(engine, "a", hypervisor_hostname="z")
    add_node(engine, "a", hypervisor_hostname="m")
    states = manager.host_states()
    assert [(s.host, s.nodename) for s in states] == [
        ("a", "m"), ("a", "z"), ("b", "b.example.org")]


def test_empty_table(manager, engine):
    assert manager.host_states() == []
    assert manager.host_states() == []
    add_node(engine, "a")
    assert [s.host for s in manager.host_states()] == ["a"]


# Incremental refresh


def test_incremental_refresh_decodes_only_the_changed_row(
        engine, manager, count_json):
    base = models.utcnow() - 5 * SECOND
    ids = [add_node(engine, f"h{i}", when=base) for i in range(5)]
    before = manager.host_states()
    count_json.clear()

    now = models.utcnow()
    update_node(engine, ids[2], changed_at=now, metrics_updated_at=now,
                metrics=metrics_json(now, cpu_percent=77.0))
    after = manager.host_states()

    stats = manager.last_refresh
    assert not stats.full
    assert stats.rows_decoded == 1 and stats.rows_fetched == 1
    # The metrics of that one row: its cpu_info and networks did not
    # change, their decoding is kept.
    assert count_json == [metrics_json(now, cpu_percent=77.0)]
    assert after[2].metrics["cpu.percent"].value == 77.0
    for index in (0, 1, 3, 4):
        assert after[index] is before[index]
    assert after[2] is not before[2]
    assert after[2].cpu_info is before[2].cpu_info


def test_changed_cpu_info_and_networks_are_decoded_again(engine, manager):
    node = add_node(engine, "a", when=models.utcnow() - 5 * SECOND)
    manager.host_states()
    update_node(engine, node, cpu_info=json.dumps({"arch": "aarch64"}),
                networks=json.dumps(["physnet2"]))
    host = manager.host_states()[0]
    assert host.cpu_info == {"arch": "aarch64"}
    assert host.networks == {"physnet2"}


def test_unchanged_refresh_decodes_nothing(engine, manager, count_json):
    for i in range(3):
        add_node(engine, f"h{i}")
    first = manager.host_states()
    count_json.clear()
    second = manager.host_states()
    assert count_json == []
    assert manager.last_refresh.rows_decoded == 0
    assert manager.last_refresh.rows_fetched == 0
    assert all(a is b for a, b in zip(first, second, strict=True))


def test_late_change_inside_the_overlap_window_is_seen(conf, engine,
                                                       manager, clock):
    conf.set_override("refresh_overlap", 10, group="filter_scheduler")
    now = models.utcnow()
    add_node(engine, "a", when=now)
    late = add_node(engine, "b", when=now - 60 * SECOND)
    manager.host_states()
    # Committed after our refresh, stamped before the watermark.
    update_node(engine, late, changed_at=now - 5 * SECOND, vcpus=64)
    # The window is checked once a second.
    clock.now += 0.5
    assert by_host(manager.host_states())["b"].vcpus == 8
    clock.now += 0.5
    assert by_host(manager.host_states())["b"].vcpus == 64
    assert manager.last_refresh.rows_decoded == 1


def test_late_change_moving_inside_the_window_is_seen(conf, engine,
                                                      manager, clock):
    conf.set_override("refresh_overlap", 10, group="filter_scheduler")
    now = models.utcnow()
    add_node(engine, "a", when=now)
    moved = add_node(engine, "b", when=now - 8 * SECOND)
    manager.host_states()
    # Neither the window's row count nor its newest change moves: only
    # the generation every writer bumps tells.
    update_node(engine, moved, changed_at=now - 2 * SECOND, vcpus=64,
                generation=NODES.c.generation + 1)
    clock.now += 1
    assert by_host(manager.host_states())["b"].vcpus == 64


def test_change_older_than_the_overlap_waits_for_a_full_refresh(
        conf, engine, manager, clock):
    conf.set_override("refresh_overlap", 10, group="filter_scheduler")
    conf.set_override("full_refresh_interval", 60, group="filter_scheduler")
    now = models.utcnow()
    add_node(engine, "a", when=now)
    late = add_node(engine, "b", when=now - 60 * SECOND)
    manager.host_states()
    update_node(engine, late, changed_at=now - 30 * SECOND, vcpus=64)
    assert by_host(manager.host_states())["b"].vcpus == 8
    clock.now += 60
    assert by_host(manager.host_states())["b"].vcpus == 64
    assert manager.last_refresh.full


def test_new_claim_bumping_the_generation_is_seen(engine, manager):
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    assert manager.host_states()[0].free_vcpus == 128
    instance = claim(engine, node, vcpus=3, memory_mb=2048, disk_gb=7,
                     group="g")
    host = manager.host_states()[0]
    assert not manager.last_refresh.full
    assert manager.last_refresh.allocations_read == 1
    assert host.free_vcpus == 125
    assert host.free_disk_gb == 93
    assert host.instances == {instance}
    assert host.instance_groups == {"g"}
    assert (host.vcpus_pending, host.memory_mb_pending) == (3, 2048)
    assert host.generation == 1


@dataclasses.dataclass(frozen=True)
class Claimed:
    """A claim as ``HostManager.record_claim`` reads it
    (``ClaimedUsage``)."""

    node_id: int
    generation: int | None
    changed_at: datetime.datetime | None
    instance_uuid: str
    vcpus: int = 3
    memory_mb: int = 512
    disk_gb: int = 10
    group: str | None = None


def test_recorded_claim_is_cached_as_a_refresh_would_read_it(
        conf, engine, manager):
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    add_node(engine, "b", when=models.utcnow() - 10 * SECOND)
    manager.host_states()
    table = manager.host_table()
    instance = claim(engine, node, vcpus=3, memory_mb=2048, disk_gb=7,
                     group="g")
    with engine.connect() as connection:
        row = connection.execute(sa.select(NODES).where(
            NODES.c.id == node)).one()
    assert manager.record_claim(Claimed(node, row.generation,
                                        row.changed_at, instance, 3, 2048,
                                        7, "g"))
    recorded = by_host(manager.host_states())["a"]
    # The refresh found the node's key as recorded: nothing read again.
    assert manager.last_refresh.rows_fetched == 0
    assert manager.last_refresh.allocations_read == 0
    fresh = by_host(HostManager(conf).host_states())["a"]
    assert recorded == fresh
    assert manager.host_table() is not table
    assert manager.host_table().column(
        "free_vcpus", float, lambda host: host.free_vcpus).tolist() == [
        125.0, 128.0]


def test_claim_after_another_change_is_left_to_the_refresh(engine,
                                                           manager):
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    manager.host_states()
    claim(engine, node, vcpus=2)  # another scheduler's: generation 1
    instance = claim(engine, node, vcpus=3)  # ours: generation 2
    assert not manager.record_claim(Claimed(node, 2, models.utcnow(),
                                            instance))
    host = manager.host_states()[0]
    assert host.vcpus_claimed == 5 and host.generation == 2
    assert not manager.record_claim(Claimed(node, 2, models.utcnow(),
                                            instance))
    assert manager.host_states()[0].vcpus_claimed == 5


def test_claim_the_cache_already_counts_is_not_recorded_twice(
        engine, manager, monkeypatch):
    """A refresh that read the node before our claim and its claims after
    counts the claim under the node's older generation: recording it
    would count it twice under a key the refresh would then trust."""
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    manager.host_states()
    read_nodes = host_queries.fetch
    claimed = {}

    def claim_between_the_reads(connection, query, shape, **parameters):
        rows = read_nodes(connection, query, shape, **parameters)
        if shape is host_queries.NodeRow and not claimed:
            claimed["instance"] = claim(engine, node, vcpus=3)
        return rows

    update_node(engine, node, generation=1)
    monkeypatch.setattr(host_queries, "fetch", claim_between_the_reads)
    host = manager.host_states()[0]
    monkeypatch.setattr(host_queries, "fetch", read_nodes)
    assert (host.generation, host.vcpus_claimed) == (1, 3)
    with engine.connect() as connection:
        row = connection.execute(sa.select(NODES).where(
            NODES.c.id == node)).one()
    assert row.generation == 2
    assert not manager.record_claim(Claimed(node, 2, row.changed_at,
                                            claimed["instance"]))
    host = manager.host_states()[0]
    assert (host.generation, host.vcpus_claimed) == (2, 3)


def test_claim_without_a_generation_is_left_to_the_refresh(engine,
                                                            manager):
    """An existing claim (not made by the call that returned it) carries
    no generation: the next refresh reads its node as usual."""
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    manager.host_states()
    instance = claim(engine, node, vcpus=3)
    assert not manager.record_claim(Claimed(node, None, None, instance))
    host = manager.host_states()[0]
    assert host.vcpus_claimed == 3 and host.generation == 1


def report(engine, node_id: int, when: datetime.datetime,
           **values) -> None:
    """A metrics report written the way the agent writes one."""
    update_node(engine, node_id, metrics=metrics_json(when, **values),
                metrics_updated_at=when, updated_at=when, changed_at=when,
                generation=NODES.c.generation + 1)


def test_report_alone_keeps_the_cached_claims(engine, manager):
    start = models.utcnow() - 20 * SECOND
    node = add_node(engine, "a", when=start)
    instance = claim(engine, node, vcpus=3, when=start + SECOND)
    assert manager.host_states()[0].vcpus_pending == 3
    report(engine, node, start + 2 * SECOND, cpu_percent=55.0)
    host = manager.host_states()[0]
    assert manager.last_refresh.rows_decoded == 1
    assert manager.last_refresh.allocations_read == 0
    assert host.metrics["cpu.percent"].value == 55.0
    assert host.instances == {instance} and host.vcpus_claimed == 3
    # The report counts the claim now: no longer pending.
    assert host.vcpus_pending == 0 and host.claims_pending == 0


def test_report_alone_leaves_pending_the_claims_it_predates(engine,
                                                            manager):
    start = models.utcnow() - 20 * SECOND
    node = add_node(engine, "a", when=start)
    claim(engine, node, vcpus=3, memory_mb=300, when=start + SECOND)
    # Made at +3 s but committed, with its key bump, at +1.5 s: a report
    # at +2 s then predates it.
    later = claim(engine, node, vcpus=2, memory_mb=200,
                  when=start + 3 * SECOND, group="g1", bump=False)
    update_node(engine, node, changed_at=start + 1.5 * SECOND,
                generation=NODES.c.generation + 1)
    before = manager.host_states()[0]
    assert (before.claims_pending, before.vcpus_pending) == (2, 5)
    report(engine, node, start + 2 * SECOND)
    host = manager.host_states()[0]
    assert manager.last_refresh.allocations_read == 0
    assert (host.claims_pending, host.vcpus_pending,
            host.memory_mb_pending) == (1, 2, 200)
    assert (host.vcpus_claimed, host.memory_mb_claimed) == (5, 500)
    assert later in host.instances and host.instance_groups == {"g1"}


@pytest.mark.parametrize("claim_first", [True, False])
def test_report_and_claim_since_the_last_read_reads_the_claims(
        engine, manager, claim_first):
    start = models.utcnow() - 20 * SECOND
    node = add_node(engine, "a", when=start)
    manager.host_states()
    if claim_first:
        instance = claim(engine, node, vcpus=3, when=start + SECOND)
        report(engine, node, start + 2 * SECOND, cpu_percent=55.0)
    else:
        report(engine, node, start + SECOND, cpu_percent=55.0)
        instance = claim(engine, node, vcpus=3, when=start + 2 * SECOND)
    host = manager.host_states()[0]
    assert manager.last_refresh.allocations_read == 1
    assert host.instances == {instance} and host.vcpus_claimed == 3
    assert host.vcpus_pending == (0 if claim_first else 3)


def test_release_then_report_reads_the_claims(engine, manager):
    start = models.utcnow() - 20 * SECOND
    node = add_node(engine, "a", when=start)
    instance = claim(engine, node, vcpus=3, when=start + SECOND)
    assert manager.host_states()[0].instances == {instance}
    with engine.begin() as connection:
        connection.execute(ALLOCATIONS.delete())
        connection.execute(NODES.update().values(
            generation=NODES.c.generation + 1,
            changed_at=start + 2 * SECOND))
    report(engine, node, start + 3 * SECOND, cpu_percent=5.0)
    host = manager.host_states()[0]
    assert host.instances == set() and host.vcpus_claimed == 0


def test_released_claim_is_seen(engine, manager):
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    instance = claim(engine, node, vcpus=3)
    assert manager.host_states()[0].vcpus_claimed == 3
    with engine.begin() as connection:
        connection.execute(ALLOCATIONS.delete().where(
            ALLOCATIONS.c.instance_uuid == instance))
        connection.execute(NODES.update().where(NODES.c.id == node).values(
            generation=NODES.c.generation + 1, changed_at=models.utcnow()))
    host = manager.host_states()[0]
    assert host.vcpus_claimed == 0 and host.instances == set()


def test_generation_bump_alone_is_seen(engine, manager, clock):
    # Two writers may stamp the same changed_at; the generation differs,
    # which the check of the overlap window (once a second) notices.
    when = models.utcnow()
    node = add_node(engine, "a", when=when)
    manager.host_states()
    claim(engine, node, vcpus=2, when=when)
    clock.now += 1
    assert manager.host_states()[0].vcpus_claimed == 2


def test_new_node_appears_incrementally(engine, manager):
    add_node(engine, "a")
    manager.host_states()
    add_node(engine, "0-first")
    states = manager.host_states()
    assert not manager.last_refresh.full
    assert [s.host for s in states] == ["0-first", "a"]


def test_renamed_node_is_reordered(engine, manager):
    first = add_node(engine, "a")
    add_node(engine, "b")
    manager.host_states()
    update_node(engine, first, host="c")
    assert [s.host for s in manager.host_states()] == ["b", "c"]


def test_deleted_node_disappears_after_full_refresh_interval(
        conf, engine, manager, clock):
    conf.set_override("full_refresh_interval", 1, group="filter_scheduler")
    add_node(engine, "a")
    doomed = add_node(engine, "b")
    assert len(manager.host_states()) == 2
    with engine.begin() as connection:
        connection.execute(NODES.delete().where(NODES.c.id == doomed))

    clock.now += 0.5
    assert len(manager.host_states()) == 2
    assert not manager.last_refresh.full

    clock.now += 0.6
    assert [s.host for s in manager.host_states()] == ["a"]
    assert manager.last_refresh.full
    assert manager.last_refresh.hosts == 1


def test_now_argument_replaces_the_clock(conf, engine, manager, clock):
    conf.set_override("full_refresh_interval", 5, group="filter_scheduler")
    add_node(engine, "a")
    manager.host_states(now=100.0)
    manager.host_states(now=104.0)
    assert not manager.last_refresh.full
    manager.host_states(now=105.0)
    assert manager.last_refresh.full


def test_full_refresh_reuses_unchanged_decodings(conf, engine, manager,
                                                 clock, count_json):
    conf.set_override("full_refresh_interval", 1, group="filter_scheduler")
    ids = [add_node(engine, f"h{i}") for i in range(4)]
    before = manager.host_states()
    count_json.clear()
    clock.now += 2
    after = manager.host_states()
    assert manager.last_refresh.full
    assert manager.last_refresh.rows_read == 4
    assert manager.last_refresh.rows_decoded == 0
    assert count_json == []
    assert after[0].metrics is before[0].metrics

    # A writer that forgot changed_at is caught by the next full load.
    with engine.begin() as connection:
        connection.execute(NODES.update().where(NODES.c.id == ids[1]).values(
            metrics=metrics_json(models.utcnow(), cpu_percent=55.0)))
    clock.now += 2
    states = by_host(manager.host_states())
    assert manager.last_refresh.rows_decoded == 1
    assert states["h1"].metrics["cpu.percent"].value == 55.0


def test_full_refresh_picks_up_new_conf_defaults(conf, engine, manager,
                                                 clock):
    conf.set_override("full_refresh_interval", 1, group="filter_scheduler")
    add_node(engine, "a")
    manager.host_states()
    conf.set_override("ram_allocation_ratio", 1.0, group="filter_scheduler")
    clock.now += 2
    assert manager.host_states()[0].free_ram_mb == 16384


# Metrics and JSON columns


def test_metric_timestamps_become_naive_utc(engine, manager):
    add_node(engine, "a", metrics=json.dumps([
        {"name": "cpu.percent", "value": 1, "source": "cpu",
         "timestamp": "2026-11-21T10:00:00Z"},
        {"name": "memory.free", "value": 2.5,
         "timestamp": "2026-11-21T12:30:00+02:00"},
        {"name": "disk.iops", "value": 3,
         "timestamp": "2026-11-21T10:00:00.123456"},
    ]))
    metrics = manager.host_states()[0].metrics
    assert metrics["cpu.percent"] == hs.Metric(
        1, datetime.datetime(2026, 11, 21, 10), "cpu")
    assert metrics["memory.free"].timestamp == datetime.datetime(
        2026, 11, 21, 10, 30)
    assert metrics["memory.free"].source == ""
    assert metrics["disk.iops"].timestamp.microsecond == 123456
    assert metrics["disk.iops"].timestamp.tzinfo is None


def warnings_of(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.WARNING
            and r.name == decode.__name__]


def test_bad_metric_values_keep_the_node_and_warn_once_per_change(
        engine, manager, caplog):
    when = models.utcnow() - 10 * SECOND
    good = {"name": "cpu.percent", "value": 12.5, "timestamp": iso(when)}
    entries = [
        good,
        {"name": "memory.free", "value": "lots", "timestamp": iso(when)},
        {"name": "disk.iops", "value": math.nan, "timestamp": iso(when)},
        {"name": "network.rx.bps", "value": True, "timestamp": iso(when)},
        {"name": "memory.used", "timestamp": iso(when)},
        {"name": "disk.read.bps", "value": 1, "timestamp": "yesterday"},
        {"name": "disk.write.bps", "value": 1, "timestamp": 12},
        {"value": 3, "timestamp": iso(when)},
        "not an entry",
    ]
    node = add_node(engine, "bad", when=when, metrics=json.dumps(entries))
    add_node(engine, "fine", when=when)

    with caplog.at_level(logging.WARNING):
        hosts = by_host(manager.host_states())
    bad = hosts["bad"]
    assert set(bad.metrics) == {"cpu.percent"}
    assert bad.bad_metrics == {"memory.free", "disk.iops", "network.rx.bps",
                               "memory.used", "disk.read.bps",
                               "disk.write.bps"}
    assert bad.metric("memory.free", models.utcnow(), 0) is None
    assert bad.metric("cpu.percent", models.utcnow(), 0) == 12.5
    assert hosts["fine"].bad_metrics == frozenset()
    records = warnings_of(caplog)
    assert len(records) == 1
    message = records[0].getMessage()
    for text in ("bad.example.org", "host bad", "memory.free: value 'lots'",
                 "disk.iops: value nan", "memory.used: missing key(s) "
                 "value", "disk.read.bps: timestamp 'yesterday'",
                 "entry #7 has no name", "entry #8"):
        assert text in message

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        manager.host_states()
    assert warnings_of(caplog) == []

    # Changed (a claim), still bad: warned again, once.
    claim(engine, node)
    with caplog.at_level(logging.WARNING):
        manager.host_states()
        manager.host_states()
    assert len(warnings_of(caplog)) == 1
    assert set(by_host(manager.host_states())["bad"].metrics) == \
        {"cpu.percent"}


@pytest.mark.parametrize("text, problem", [
    ("{not json", "metrics is not JSON"),
    ('{"cpu.percent": 5}', "metrics hold a dict, not a list"),
    ("NaN", "metrics hold a float, not a list"),
    ("", "metrics is not JSON"),
])
def test_unreadable_metrics_keep_the_node(engine, manager, caplog, text,
                                          problem):
    add_node(engine, "a", metrics=text)
    with caplog.at_level(logging.WARNING):
        host = manager.host_states()[0]
        manager.host_states()
    assert host.metrics == {} and host.bad_metrics == frozenset()
    assert host.free_vcpus == 128
    records = warnings_of(caplog)
    assert len(records) == 1
    assert problem in records[0].getMessage()
    assert "a.example.org" in records[0].getMessage()


def test_malformed_cpu_info_and_networks_fall_back(engine, manager, caplog):
    add_node(engine, "a", cpu_info="[1, 2", networks='{"physnet1": 1}')
    add_node(engine, "b", cpu_info='["x86_64"]', networks='["n1", 5]')
    with caplog.at_level(logging.WARNING):
        hosts = by_host(manager.host_states())
        manager.host_states()
    assert hosts["a"].cpu_info == {} and hosts["a"].networks == frozenset()
    assert hosts["b"].cpu_info == {}
    assert hosts["b"].networks == frozenset({"n1"})
    assert "cpu.percent" in hosts["a"].metrics
    messages = sorted(r.getMessage() for r in warnings_of(caplog))
    assert len(messages) == 2
    assert "cpu_info is not JSON" in messages[0]
    assert "networks hold a dict" in messages[0]
    assert "cpu_info holds a list" in messages[1]
    assert "networks hold entries that are not names: [5]" in messages[1]


def test_malformed_cpu_info_is_warned_of_at_each_report(engine, manager,
                                                        caplog):
    node = add_node(engine, "a", when=models.utcnow() - 5 * SECOND,
                    cpu_info="[1, 2")
    manager.host_states()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        report(engine, node, models.utcnow(), cpu_percent=5.0)
        manager.host_states()
    (message,) = [r.getMessage() for r in warnings_of(caplog)]
    assert "cpu_info is not JSON" in message


# Failures, threads, copies


def test_database_error_propagates_and_keeps_the_cache(engine, manager):
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    before = manager.host_states()
    stats = manager.last_refresh
    claim(engine, node, vcpus=2)
    with engine.begin() as connection:
        connection.execute(sa.text("ALTER TABLE allocations RENAME TO gone"))
    with pytest.raises(sa_exc.SQLAlchemyError):
        manager.host_states()
    assert manager.last_refresh is stats
    assert manager._table.hosts == before
    assert before[0].vcpus_claimed == 0

    with engine.begin() as connection:
        connection.execute(sa.text("ALTER TABLE gone RENAME TO allocations"))
    assert manager.host_states()[0].vcpus_claimed == 2


def test_failed_first_load_is_retried(conf, engine, manager):
    add_node(engine, "a")
    with engine.begin() as connection:
        connection.execute(sa.text("ALTER TABLE compute_nodes RENAME TO x"))
    with pytest.raises(sa_exc.OperationalError):
        manager.host_states()
    assert manager.last_refresh is None
    with engine.begin() as connection:
        connection.execute(sa.text("ALTER TABLE x RENAME TO compute_nodes"))
    assert len(manager.host_states()) == 1
    assert manager.last_refresh.full


def test_node_deleted_between_scan_and_read_leaves_the_cache(
        conf, engine, manager, monkeypatch, clock):
    conf.set_override("refresh_overlap", 10, group="filter_scheduler")
    now = models.utcnow()
    doomed = add_node(engine, "a", when=now - 60 * SECOND)
    add_node(engine, "b", when=now)
    manager.host_states()
    # A late change: its key is scanned first, its row read afterwards.
    update_node(engine, doomed, vcpus=1, changed_at=now - 5 * SECOND)
    clock.now += 1
    real_is_stale = manager._is_stale

    def delete_after_scan(key):
        if key.id == doomed:
            with engine.begin() as connection:
                connection.execute(NODES.delete().where(NODES.c.id == doomed))
        return real_is_stale(key)

    monkeypatch.setattr(manager, "_is_stale", delete_after_scan)
    assert [s.host for s in manager.host_states()] == ["b"]


def test_snapshot_copies_what_consume_changes(engine, manager):
    node = add_node(engine, "a")
    instance = claim(engine, node, group="g")
    cached = manager.host_states()
    copies = hs.snapshot(cached)
    assert copies == cached and copies[0] is not cached[0]
    assert copies[0].metrics is cached[0].metrics
    copies[0].consume(2, 1024, 10, "new", "h")
    assert copies[0].vcpus_claimed == cached[0].vcpus_claimed + 2
    assert cached[0].instances == {instance}
    assert cached[0].instance_groups == {"g"}
    assert copies[0].instances == {instance, "new"}
    assert manager.host_states()[0].vcpus_claimed == 1


def test_concurrent_refreshes_while_nodes_change(engine, manager):
    ids = [add_node(engine, f"h{i:02d}") for i in range(20)]
    expected = [f"h{i:02d}" for i in range(20)]

    def read() -> None:
        assert [s.host for s in manager.host_states()] == expected

    with fakes.reading_threads(read, 4):
        for round_ in range(30):
            claim(engine, ids[round_ % 20], vcpus=1)
    assert sum(s.vcpus_claimed for s in manager.host_states()) == 30


# HostState.metric_since and the request's metrics window

def metric_host(age: float, now: datetime.datetime,
                **fields) -> hs.HostState:
    stamp = now - datetime.timedelta(seconds=age)
    return hs.HostState(
        node_id=1, uuid="u", host="h", nodename="n", vcpus=8,
        metrics={"memory.free": hs.Metric(4096.0 * 2**20, stamp),
                 "cpu.percent": hs.Metric(10.0, stamp)}, **fields)


def test_metric_since_agrees_with_metric():
    now = datetime.datetime(2024, 5, 1, 12, 0, 0)
    for age in (0, 299, 300, 300.000001, 301):
        for pending in ({}, {"memory_mb_pending": 1024,
                             "vcpus_pending": 2}):
            host = metric_host(age, now, **pending)
            for name in ("memory.free", "cpu.percent", "disk.iops"):
                for max_age in (0, 300):
                    assert host.metric_since(
                        name, hs.stale_before(now, max_age)) == \
                        host.metric(name, now, max_age)


def test_metric_since_cutoff_is_inclusive_and_optional():
    now = datetime.datetime(2024, 5, 1, 12, 0, 0)
    cutoff = now - datetime.timedelta(seconds=300)
    assert metric_host(300, now).metric_since("cpu.percent", cutoff) == 10.0
    assert metric_host(300.000001, now).metric_since(
        "cpu.percent", cutoff) is None
    assert metric_host(10 ** 6, now).metric_since(
        "cpu.percent", None) == 10.0
    # Pending claims adjust the value exactly as metric() does.
    assert metric_host(0, now, memory_mb_pending=1024).metric_since(
        "memory.free", cutoff) == 3072.0 * 2**20


def test_seconds_before_and_stale_before():
    now = datetime.datetime(2024, 5, 1, 12, 0, 0)
    assert hs.seconds_before(now, 60) == now - datetime.timedelta(minutes=1)
    # Further back than year 1: nothing is that old.
    assert hs.seconds_before(now, 10 ** 14) == datetime.datetime.min
    assert hs.stale_before(now, 0) is None
    assert hs.stale_before(now, 300) == now - datetime.timedelta(minutes=5)


def test_metrics_window_once_per_request(conf, monkeypatch):
    spec = RequestSpec.from_dict({"flavor": {}})
    now = datetime.datetime(2024, 5, 1, 12, 0, 0)
    spec.start_call(now)
    window = hs.metrics_window(spec, conf)
    assert window == hs.MetricsWindow(
        now, 300, now - datetime.timedelta(seconds=300))
    conf.set_override("max_age", 0, group="metrics")
    try:
        # Read once per request: the reload applies to the next call.
        assert hs.metrics_window(spec, conf) is window
        later = now + SECOND
        spec.start_call(later)
        assert hs.metrics_window(spec, conf) == hs.MetricsWindow(
            later, 0, None)
        # Outside a scheduler call the clock stands in for spec.now.
        monkeypatch.setattr(scheduler_clock, "utcnow", lambda: now)
        assert hs.metrics_window(RequestSpec.from_dict({"flavor": {}}),
                                 conf).now == now
    finally:
        conf.clear_override("max_age", group="metrics")


def test_built_states_set_every_field(engine, manager):
    # _build() fills the state's __dict__ itself: a field added to
    # HostState must be added there too.
    node = add_node(engine, "a", when=models.utcnow() - 5 * SECOND)
    claim(engine, node, vcpus=2)
    (state,) = manager.host_states()
    assert set(vars(state)) == {field.name for field
                                in dataclasses.fields(hs.HostState)}


def test_claims_on_gives_the_claims_the_cache_read(engine, manager):
    node = add_node(engine, "a", when=models.utcnow() - 5 * SECOND)
    other = add_node(engine, "b", when=models.utcnow() - 5 * SECOND)
    instance = claim(engine, node, vcpus=3, memory_mb=1024, disk_gb=7,
                     group="g")
    manager.host_states()
    found = manager.claims_on([node, other, 999])
    assert set(found) == {node, other} and found[other] == ()
    (row,) = found[node]
    assert (row.instance_uuid, row.vcpus, row.memory_mb, row.disk_gb,
            row.instance_group) == (instance, 3, 1024, 7, "g")


def test_metrics_stay_out_of_the_garbage_collectors_tracking():
    """A cache of 100,000 hosts holds millions of metrics: a full
    collection must not walk them."""
    metric = hs.Metric(1.0, datetime.datetime(2026, 1, 1), "libvirt")
    assert not gc.is_tracked(metric)
    assert metric == hs.Metric(1.0, datetime.datetime(2026, 1, 1),
                               "libvirt")
    assert hs.Metric(2.0, metric.timestamp).source == ""


def _free_vcpus(table) -> list[float]:
    return table.attribute("free_vcpus").tolist()


@pytest.fixture
def two_nodes(engine) -> int:
    """Nodes a and b, reported 10 s ago; a's id."""
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    add_node(engine, "b", when=models.utcnow() - 10 * SECOND)
    return node


def test_a_leased_table_keeps_its_columns_through_a_refresh(
        engine, manager, two_nodes):
    node = two_nodes
    with manager.leased_table() as table:
        column = table.attribute("free_vcpus")
        claim(engine, node, vcpus=3)
        with manager.leased_table() as newer:
            assert _free_vcpus(newer) == [125.0, 128.0]
        # Read again inside the lease: the same values, the same array.
        assert table.attribute("free_vcpus") is column
        assert _free_vcpus(table) == [128.0, 128.0]


def test_a_table_nobody_reads_hands_its_columns_over(engine, manager,
                                                     two_nodes):
    node = two_nodes
    with manager.leased_table() as table:
        column = table.attribute("free_vcpus")
    claim(engine, node, vcpus=3)
    with manager.leased_table() as newer:
        # Patched in place rather than copied ...
        assert newer.attribute("free_vcpus") is column
        assert _free_vcpus(newer) == [125.0, 128.0]
    # ... and the old table, asked again, builds its own from its hosts.
    assert _free_vcpus(table) == [128.0, 128.0]
    assert not column.flags.writeable


def test_a_table_handed_out_for_good_is_never_changed(engine, manager,
                                                      two_nodes):
    node = two_nodes
    table = manager.host_table()
    column = table.attribute("free_vcpus")
    claim(engine, node, vcpus=3)
    assert _free_vcpus(manager.host_table()) == [125.0, 128.0]
    assert table.attribute("free_vcpus") is column
    assert column.tolist() == [128.0, 128.0]
