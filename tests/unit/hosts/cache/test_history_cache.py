"""The host cache keeps each node's report history across refreshes."""

import datetime
import json
from unittest import mock

import pytest

from scheduler.db import models
from scheduler.hosts import history
from scheduler.hosts import history_block
from scheduler.hosts import instance_metrics
from tests.unit.hosts.cache.fakes import NODES
from tests.unit.hosts.cache.fakes import add_node
from tests.unit.hosts.cache.fakes import claim
from tests.unit.hosts.cache.fakes import report
from tests.unit.hosts.cache.fakes import update_node
from tests.unit.weights.loads import clear_metrics_overrides

MINUTE = datetime.timedelta(minutes=1)


@pytest.fixture(autouse=True)
def _clear_overrides(conf):
    yield
    clear_metrics_overrides(conf)


def test_reports_accumulate_within_the_window(conf, engine, manager):
    conf.set_override("history_window", 180.0, "metrics")
    start = models.utcnow() - 10 * MINUTE
    node = add_node(engine, "a", when=start)
    manager.host_states()
    for minute, value in enumerate([20.0, 40.0, 60.0, 80.0], start=1):
        report(engine, node, start + minute * MINUTE, cpu_percent=value)
        host = manager.host_states()[0]
    # The report of the start (10) and the first (20) left the window.
    assert host.metric_history.reports("cpu.percent") == 3
    assert host.metric_since("cpu.percent:mean:1h", None) == 60.0
    assert host.metric_since("cpu.percent:max:1h", None) == 80.0
    assert host.metric_since("cpu.percent:mean:90s", None) == 70.0


def test_a_refresh_adds_the_full_batches_of_its_nodes_in_one_pass(
        conf, engine, manager):
    start = models.utcnow() - 30 * MINUTE
    nodes = [add_node(engine, name, when=start) for name in "abc"]
    manager.host_states()
    with mock.patch.object(history_block, "appended_rows_together",
                           wraps=history_block.appended_rows_together
                           ) as together:
        for minute in range(1, history.DEFERRED_REPORTS + 2):
            for node in nodes:
                report(engine, node, start + minute * MINUTE,
                       cpu_percent=float(minute + node),
                       memory_free=8 * 1024 ** 3)
            hosts = manager.host_states()
    # The 17th report found each node's batch full: their 16 reports
    # went in in one pass, as the refresh read the three.
    assert together.call_count == 1
    assert len(together.call_args.args[0]) == 3
    for host in hosts:
        assert host.metric_history.reports("cpu.percent") == 18
        assert host.metric_since("cpu.percent:max:1h", None) == float(
            history.DEFERRED_REPORTS + 1 + host.node_id)


def test_a_claim_keeps_the_history_and_adds_its_pending_share(
        conf, engine, manager):
    start = models.utcnow() - 10 * MINUTE
    node = add_node(engine, "a", when=start)
    manager.host_states()
    report(engine, node, start + MINUTE, cpu_percent=30.0)
    manager.host_states()
    claim(engine, node, vcpus=2, when=start + 2 * MINUTE)
    host = manager.host_states()[0]
    assert host.metric_history.reports("cpu.percent") == 2
    # mean(10, 30) + 2 of 8 vCPUs busy.
    assert host.metric_since("cpu.percent:mean:1h", None) == 45.0


def test_expected_instance_cpu_sets_the_pending_share(conf, engine,
                                                      manager):
    conf.set_override("expected_instance_cpu", "50", "metrics")
    start = models.utcnow() - 10 * MINUTE
    node = add_node(engine, "a", when=start)
    claim(engine, node, vcpus=4, when=start + MINUTE)
    host = manager.host_states()[0]
    assert host.pending_cpu_fraction == 0.5
    assert host.metric_since("cpu.percent", None) == pytest.approx(35.0)
    assert host.instance_flavors == {next(iter(host.instances)): (4, 512)}


def instance_report(engine, node: int, when: datetime.datetime,
                    loads: dict[str, float], in_column: bool = False
                    ) -> None:
    """A report of cpu.percent and each instance's instance.cpu.percent:
    in the metrics list, or (``in_column``) in the column of their own
    that agents write them to since schema revision 0007."""
    stamp = when.isoformat(timespec="microseconds") + "Z"
    entries = [{"name": "cpu.percent", "value": 50.0, "timestamp": stamp}]
    instances = [{"name": "instance.cpu.percent", "instance": uuid,
                  "value": value, "timestamp": stamp}
                 for uuid, value in loads.items()]
    update_node(engine, node, metrics=json.dumps(
                    entries if in_column else entries + instances),
                instance_metrics=json.dumps(instances) if in_column else None,
                metrics_updated_at=when, updated_at=when, changed_at=when,
                generation=NODES.c.generation + 1)


@pytest.mark.parametrize("in_column", [False, True])
def test_instance_history_is_kept_when_its_window_is_set(conf, engine,
                                                         manager, in_column):
    conf.set_override("instance_history_window", 3600.0, "metrics")
    start = models.utcnow() - 10 * MINUTE
    node = add_node(engine, "a", when=start)
    kept = claim(engine, node, vcpus=2, when=start)
    gone = claim(engine, node, vcpus=2, when=start)
    manager.host_states()
    instance_report(engine, node, start + MINUTE, {kept: 20.0, gone: 90.0},
                    in_column)
    manager.host_states()
    instance_report(engine, node, start + 2 * MINUTE, {kept: 40.0},
                    in_column)
    host = manager.host_states()[0]
    assert host.instance_history.reports(kept) == 2
    # An instance no longer reported leaves the history.
    assert host.instance_history.reports(gone) == 0
    assert instance_metrics.instance_cpu_mean(host, kept, 3600.0) == 30.0
    assert instance_metrics.instance_cpu_mean(host, kept, 60.0) == 40.0


def test_without_an_instance_window_the_newest_entry_is_used(
        conf, engine, manager):
    start = models.utcnow() - 10 * MINUTE
    node = add_node(engine, "a", when=start)
    kept = claim(engine, node, vcpus=2, when=start)
    manager.host_states()
    instance_report(engine, node, start + MINUTE, {kept: 20.0})
    manager.host_states()
    instance_report(engine, node, start + 2 * MINUTE, {kept: 40.0})
    host = manager.host_states()[0]
    assert len(host.instance_history) == 0
    assert instance_metrics.instance_cpu_mean(host, kept, 3600.0) == 40.0
