"""scheduler.hosts.cache.manager.HostManager: metrics and JSON columns,
failures and threads, HostState.metric_since and the request metrics
window, leased tables."""

import dataclasses
import datetime
import gc
import json
import logging
import math

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler.common import clock as scheduler_clock
from scheduler.db import models
from scheduler.hosts import state as hs
from scheduler.hosts.cache import decode
from scheduler.request.spec import RequestSpec
from tests import fakes
from tests.unit.hosts.cache.fakes import NODES
from tests.unit.hosts.cache.fakes import SECOND
from tests.unit.hosts.cache.fakes import add_node
from tests.unit.hosts.cache.fakes import by_host
from tests.unit.hosts.cache.fakes import claim
from tests.unit.hosts.cache.fakes import iso
from tests.unit.hosts.cache.fakes import report
from tests.unit.hosts.cache.fakes import update_node

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

    # Refreshed again, and the row moved by a claim (its report did
    # not change): not warned again. A new report, still bad: once.
    caplog.clear()
    entries[0] = {**good, "value": 13.5}
    with caplog.at_level(logging.WARNING):
        manager.host_states()
        claim(engine, node)
        assert by_host(manager.host_states())["bad"].instances
        assert warnings_of(caplog) == []
        update_node(engine, node, metrics=json.dumps(entries))
        manager.host_states()
        manager.host_states()
    assert len(warnings_of(caplog)) == 1
    assert by_host(manager.host_states())["bad"].metrics[
        "cpu.percent"].value == 13.5


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
