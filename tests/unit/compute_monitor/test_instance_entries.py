"""Instance entries (docs/operator-guide.md) through the agent and the file
monitor."""

import json
import logging

import pytest
import sqlalchemy as sa

from compute_monitor.monitors import file
from scheduler.db import api as db_api
from scheduler.db import tables
from tests.unit.compute_monitor.fakes import TS
from tests.unit.compute_monitor.fakes import make_agent
from tests.unit.compute_monitor.fakes import metric


def of(instance: str, name: str, value: float) -> dict:
    return metric(name, value) | {"instance": instance}


def test_every_instance_keeps_its_entries(monitor_config, caplog):
    agent = make_agent(monitor_config, libvirt={"result": [
        metric("cpu.percent", 50),
        of("vm-a", "instance.cpu.percent", 90),
        of("vm-b", "instance.cpu.percent", 10),
        of("vm-a", "instance.memory.used", 2 ** 30)]})
    with caplog.at_level(logging.WARNING):
        metrics = agent.collect()
    assert caplog.records == []
    assert [(m["name"], m.get("instance"), m["value"]) for m in metrics] == [
        ("cpu.percent", None, 50),
        ("instance.cpu.percent", "vm-a", 90),
        ("instance.cpu.percent", "vm-b", 10),
        ("instance.memory.used", "vm-a", 2 ** 30)]


def test_the_same_instance_metric_twice_keeps_the_first(monitor_config,
                                                        caplog):
    agent = make_agent(
        monitor_config,
        libvirt={"result": [of("vm-a", "instance.cpu.percent", 90)]},
        file={"result": [of("vm-a", "instance.cpu.percent", 5),
                         of("vm-b", "instance.cpu.percent", 7)]})
    with caplog.at_level(logging.WARNING):
        metrics = agent.collect()
    assert [(m["instance"], m["value"]) for m in metrics] == [
        ("vm-a", 90), ("vm-b", 7)]
    assert ("Metric instance.cpu.percent of vm-a is reported by monitors "
            "libvirt and file") in caplog.text


@pytest.mark.parametrize("entry, reason", [
    (of("", "instance.cpu.percent", 1), "instance '' is not an instance"),
    (of(None, "instance.cpu.percent", 1), "instance None is not an"),
    (of(["vm"], "instance.cpu.percent", 1), "instance ['vm'] is not an"),
    (of("vm-a", "cpu.percent", 1), "instance.* names need an instance key"),
    (metric("instance.cpu.percent", 1), "need an instance key"),
])
def test_malformed_instance_entries_are_dropped(monitor_config, caplog,
                                                entry, reason):
    agent = make_agent(monitor_config, odd={
        "result": [entry, of("vm-a", "instance.cpu.percent", 3)]})
    with caplog.at_level(logging.WARNING):
        metrics = agent.collect()
    assert [(m["name"], m["instance"]) for m in metrics] == [
        ("instance.cpu.percent", "vm-a")]
    dropped, = [r.getMessage() for r in caplog.records
                if "Dropped metric" in r.getMessage()]
    assert reason in dropped


def test_file_monitor_passes_instance_entries_on(monitor_config, tmp_path):
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps([
        {"name": "rack.power.watts", "value": 512},
        {"name": "instance.cpu.percent", "value": 35, "instance": "vm-a"},
        {"name": "instance.memory.used", "value": 1e9, "instance": "vm-a",
         "timestamp": TS}]))
    monitor_config.set_override("file_path", str(path),
                                group="compute_monitor")
    agent = make_agent(monitor_config)
    agent.monitors = [("file", file.FileMonitor(monitor_config))]
    metrics = agent.collect()
    assert [(m["name"], m.get("instance"), m["value"]) for m in metrics] == [
        ("rack.power.watts", None, 512),
        ("instance.cpu.percent", "vm-a", 35),
        ("instance.memory.used", "vm-a", 1e9)]
    assert metrics[2]["timestamp"] == TS


def test_instance_entries_are_stored_apart_and_shown_as_reported(
        synced_monitor_config):
    # Schema revision 0007: the host's own metrics in ``metrics``, the
    # instance entries in ``instance_metrics``; what the agent shows is
    # the one list the monitors reported.
    reported = [metric("cpu.percent", 50),
                of("vm-a", "instance.cpu.percent", 90),
                of("vm-b", "instance.cpu.percent", 10)]
    agent = make_agent(synced_monitor_config,
                       libvirt={"result": reported})
    agent.run_cycle()
    engine = db_api.get_engine(synced_monitor_config)
    with engine.connect() as connection:
        own, apart = connection.execute(sa.select(
            tables.NODES.c.metrics, tables.NODES.c.instance_metrics)).one()
    assert [m["name"] for m in json.loads(own)] == ["cpu.percent"]
    assert [(m["instance"], m["value"]) for m in json.loads(apart)] == [
        ("vm-a", 90), ("vm-b", 10)]
    shown = agent.node_row()
    assert "instance_metrics" not in shown
    assert [(m["name"], m.get("instance")) for m in shown["metrics"]] == [
        ("cpu.percent", None), ("instance.cpu.percent", "vm-a"),
        ("instance.cpu.percent", "vm-b")]


def test_a_report_without_instance_entries_clears_the_column(
        synced_monitor_config):
    agent = make_agent(synced_monitor_config, libvirt={"result": [
        metric("cpu.percent", 50), of("vm-a", "instance.cpu.percent", 90)]})
    agent.run_cycle()
    agent.monitors[0][1].result = [metric("cpu.percent", 40)]
    agent.run_cycle()
    engine = db_api.get_engine(synced_monitor_config)
    with engine.connect() as connection:
        apart = connection.execute(sa.select(
            tables.NODES.c.instance_metrics)).scalar()
    assert apart is None
    assert [m["name"] for m in agent.node_row()["metrics"]] == [
        "cpu.percent"]
