"""The agent's cycle: plugin faults, validation, de-duplication, DB writes."""

import json
import logging
import sys
import threading

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from compute_monitor import agent as agent_mod
from scheduler import exception
from scheduler.db import api as db_api
from scheduler.db import models
from tests.fakes import exceptions_at_warnings
from tests.unit.compute_monitor.fakes import TS
from tests.unit.compute_monitor.fakes import make_agent
from tests.unit.compute_monitor.fakes import metric


def test_raising_plugin_does_not_stop_the_others(monitor_config, caplog):
    agent = make_agent(monitor_config,
                       broken={"error": RuntimeError("sensor gone")},
                       good={"result": [metric("cpu.percent", 12.5)]})
    with caplog.at_level(logging.ERROR):
        metrics = agent.collect()
    assert [m["name"] for m in metrics] == ["cpu.percent"]
    assert "Monitor broken failed: RuntimeError: sensor gone" in caplog.text


def test_hanging_plugin_is_abandoned_and_skipped_while_running(
        monitor_config, caplog):
    monitor_config.set_override("interval", 1, group="compute_monitor")
    release = threading.Event()
    agent = make_agent(monitor_config,
                       stuck={"result": [metric("stuck.value", 1)],
                              "block": release},
                       good={"result": [metric("memory.free", 4.0)]})
    with caplog.at_level(logging.WARNING):
        assert [m["name"] for m in agent.collect()] == ["memory.free"]
        assert "Monitor stuck did not return within the 1 s" in caplog.text
        # The next cycle must not pile a second call onto the hung plugin.
        assert [m["name"] for m in agent.collect()] == ["memory.free"]
        assert "Monitor stuck is still running" in caplog.text
    release.set()
    agent._running["stuck"].wait(5)
    assert sorted(m["name"] for m in agent.collect()) == [
        "memory.free", "stuck.value"]


@pytest.mark.parametrize("entry, reason", [
    ({"name": "a.b", "value": 1}, "missing key(s) timestamp"),
    ({"value": 1, "timestamp": TS}, "missing key(s) name"),
    (metric("a.b", "12"), "value '12' is not a finite number"),
    (metric("a.b", float("nan")), "value nan is not a finite number"),
    (metric("a.b", float("inf")), "value inf is not a finite number"),
    (metric("a.b", True), "value True is not a finite number"),
    (metric("Bad Name", 1), "name 'Bad Name' is not dotted lower case"),
    ({"name": "a.b", "value": 1, "timestamp": "yesterday"},
     "timestamp 'yesterday' is not ISO-8601"),
    ("a.b=1", "entry 'a.b=1' is not an object"),
])
def test_malformed_entries_are_dropped_with_one_line(monitor_config, caplog,
                                                     entry, reason):
    agent = make_agent(monitor_config, odd={
        "result": [entry, metric("ok.value", 3)]})
    with caplog.at_level(logging.WARNING):
        metrics = agent.collect()
    assert [m["name"] for m in metrics] == ["ok.value"]
    dropped = [r.getMessage() for r in caplog.records
               if "Dropped metric" in r.getMessage()]
    assert len(dropped) == 1
    assert "from monitor odd" in dropped[0]
    assert reason in dropped[0]


def test_non_list_result_is_rejected(monitor_config, caplog):
    agent = make_agent(monitor_config, odd={"result": {"a": 1}},
                       good={"result": [metric("ok.value", 3)]})
    with caplog.at_level(logging.ERROR):
        assert [m["name"] for m in agent.collect()] == ["ok.value"]
    assert "Monitor odd returned dict instead of a list" in caplog.text


def test_duplicate_metric_keeps_first_and_names_both(monitor_config, caplog):
    agent = make_agent(
        monitor_config,
        memory={"result": [metric("memory.free", 100, "psutil")]},
        file={"result": [metric("memory.free", 5, "file"),
                         metric("rack.temperature", 21.5, "file")]})
    with caplog.at_level(logging.WARNING):
        metrics = agent.collect()
    assert {m["name"]: m["value"] for m in metrics} == {
        "memory.free": 100, "rack.temperature": 21.5}
    assert ("Metric memory.free is reported by monitors memory and file; "
            "keeping the value from memory") in caplog.text


def test_unknown_monitor_is_a_config_error(monitor_config):
    monitor_config.set_override("monitors", ["cpu", "gpu_temp"],
                                group="compute_monitor")
    with pytest.raises(exception.ConfigError) as error:
        agent_mod.load_monitors(monitor_config)
    assert "[compute_monitor] monitors" in str(error.value)
    assert "'gpu_temp'" in str(error.value)


def test_every_bad_monitor_is_named_in_the_one_error(monitor_config,
                                                     monkeypatch):
    # Issue 30: only the first of two bad monitors was reported.
    monkeypatch.setitem(sys.modules, "libvirt", None)  # not installed
    monitor_config.set_override("monitors", ["libvirt", "memry", "cpu",
                                             "dsk"], group="compute_monitor")
    with pytest.raises(exception.ConfigError) as error:
        agent_mod.load_monitors(monitor_config)
    message = str(error.value)
    assert message.startswith("invalid value 'libvirt,memry,dsk' for "
                              "[compute_monitor] monitors: monitor libvirt "
                              "failed to load: ")
    assert "libvirt-python is not installed" in message
    assert message.endswith(
        "; expected entry points of compute_monitor.monitors: cpu, disk, "
        "file, libvirt, memory, network; did you mean 'memory' for "
        "'memry'?; did you mean 'disk' for 'dsk'?")


def _rows(conf):
    with db_api.get_engine(conf).connect() as connection:
        return connection.execute(
            sa.select(models.ComputeNode.__table__)).mappings().all()


def test_register_then_report_writes_one_row(synced_monitor_config):
    conf = synced_monitor_config
    conf.set_override("vcpus", 48, group="compute_monitor")
    conf.set_override("cluster", "c1", group="compute_monitor")
    conf.set_override("networks", ["public", "storage"],
                      group="compute_monitor")
    conf.set_override("cpu_info", {"arch": "aarch64"},
                      group="compute_monitor")
    agent = make_agent(conf, fake={"result": [metric("cpu.percent", 7.5)]})
    assert agent.run_cycle() == 1
    row = _rows(conf)[0]
    assert (row.host, row.hypervisor_hostname, row.cluster) == (
        "node-1", "node-1", "c1")
    assert row.vcpus == 48
    assert row.memory_mb > 0 and row.local_gb >= 0
    assert json.loads(row.networks) == ["public", "storage"]
    assert json.loads(row.cpu_info)["arch"] == "aarch64"
    assert json.loads(row.metrics) == [metric("cpu.percent", 7.5)]
    assert row.metrics_updated_at == row.updated_at

    # A restarted agent updates the same row instead of adding one.
    again = make_agent(conf, fake={"result": [metric("cpu.percent", 9.0)]})
    again.run_cycle()
    rows = _rows(conf)
    assert len(rows) == 1 and rows[0].uuid == row.uuid
    assert json.loads(rows[0].metrics)[0]["value"] == 9.0


def test_report_for_deleted_row_registers_again(synced_monitor_config):
    conf = synced_monitor_config
    agent = make_agent(conf, fake={"result": [metric("cpu.percent", 1)]})
    agent.run_cycle()
    with db_api.get_engine(conf).begin() as connection:
        connection.execute(sa.delete(models.ComputeNode.__table__))
    agent.run_cycle()
    assert len(_rows(conf)) == 1


def test_unsynced_schema_is_reported_not_crashed(monitor_config):
    agent = make_agent(monitor_config)
    with pytest.raises(exception.SchedulerError, match="db sync"):
        agent.run_cycle()


def test_database_errors_back_off_then_recover(synced_monitor_config,
                                               caplog):
    conf = synced_monitor_config
    conf.set_override("interval", 30, group="compute_monitor")
    agent = make_agent(conf, fake={"result": [metric("cpu.percent", 1)]})
    real_write = agent.write_report
    failures = iter([True, True, True, False])

    def flaky_write(metrics):
        if next(failures):
            raise sa_exc.OperationalError("UPDATE", {}, Exception(
                "connection refused"))
        real_write(metrics)

    agent.write_report = flaky_write
    delays = []

    def fake_sleep(delay):
        delays.append(delay)
        if len(delays) == 4:
            agent.stop()

    with caplog.at_level(logging.WARNING), \
            exceptions_at_warnings(agent_mod.LOG.logger.name) as exceptions:
        agent.run_forever(sleep=fake_sleep)
    assert exceptions == [None] * 3  # no repeat of the error by oslo.log
    assert delays[:3] == [1.0, 2.0, 4.0]
    assert 25 < delays[3] <= 30  # back to the normal interval
    assert caplog.text.count("unreachable (connection refused)") == 3
    assert json.loads(_rows(conf)[0].metrics)[0]["name"] == "cpu.percent"


def test_backoff_is_bounded():
    backoff = agent_mod.Backoff(5)
    assert [backoff.next() for _ in range(5)] == [1, 2, 4, 5, 5]
    backoff.reset()
    assert backoff.next() == 1
