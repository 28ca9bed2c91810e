"""The host cache keeps each node's report history across refreshes."""

import datetime

import pytest

from scheduler.db import models
from tests.unit.hosts.cache.test_manager import add_node
from tests.unit.hosts.cache.test_manager import claim
from tests.unit.hosts.cache.test_manager import report

MINUTE = datetime.timedelta(minutes=1)


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
    conf.clear_override("history_window", "metrics")


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
    conf.clear_override("expected_instance_cpu", "metrics")
