"""scheduler.hosts.cache.manager.HostManager: full and incremental
refreshes of the host cache."""

import gc
import json
import types

from scheduler.db import models
from scheduler.hosts import state as hs
from scheduler.hosts.cache import decode
from tests.unit.hosts.cache.fakes import NODES
from tests.unit.hosts.cache.fakes import SECOND
from tests.unit.hosts.cache.fakes import add_node
from tests.unit.hosts.cache.fakes import by_host
from tests.unit.hosts.cache.fakes import claim
from tests.unit.hosts.cache.fakes import metrics_json
from tests.unit.hosts.cache.fakes import update_node

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
    # Read again, its report (unchanged) not decoded again.
    assert manager.last_refresh.rows_fetched == 1
    assert manager.last_refresh.rows_decoded == 0


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


def test_full_load_sees_a_report_written_without_moving_the_key(
        conf, engine, manager, clock):
    # The cache keeps a report's text as its length and hash only: the
    # full load, the safety net for such a writer, still tells.
    conf.set_override("full_refresh_interval", 60, group="filter_scheduler")
    when = models.utcnow() - 120 * SECOND
    node = add_node(engine, "a", when=when)
    host = manager.host_states()[0]
    text = metrics_json(when, cpu_percent=77.0, memory_free=8 * 1024 ** 3)
    update_node(engine, node, metrics=text, changed_at=when)
    clock.now += 60
    again = manager.host_states()[0]
    assert manager.last_refresh.full and manager.last_refresh.rows_decoded
    assert again.metrics["cpu.percent"].value == 77.0
    assert host.metrics["cpu.percent"].value == 10.0
    clock.now += 60
    assert manager.host_states()[0] is again
    assert manager.last_refresh.full and not manager.last_refresh.rows_decoded


def _strings_held(root: object, depth: int = 6) -> list[str]:
    """The strings reachable from ``root`` in at most ``depth`` steps."""
    found, seen, layer = [], set(), [root]
    for _ in range(depth):
        following = []
        for held in layer:
            if id(held) in seen or isinstance(held, type | types.ModuleType):
                continue
            seen.add(id(held))
            if isinstance(held, str):
                found.append(held)
            else:
                following.extend(gc.get_referents(held))
        layer = following
    return found


def test_the_cache_keeps_no_report_text(engine, manager):
    # A report is a few KB of text, most of a host's memory: the cache
    # keeps what it decoded, not the text (but for instance entries).
    add_node(engine, "a")
    manager.host_states()
    entry = next(iter(manager._entries.values()))
    assert "cpu.percent" in entry.state.metrics
    assert not [held for held in _strings_held(entry)
                if '"cpu.percent"' in held]
    assert entry.decoded.instance_metrics is decode._NO_INSTANCES
