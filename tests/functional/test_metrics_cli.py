"""``scheduler-manage metrics list`` and ``config check`` against the
metric names a fleet reports."""

import json

import pytest
import sqlalchemy as sa

from scheduler import exception
from scheduler.db import models
from scheduler.db import schema
from tests.functional.rpc_harness import SERVING
from tests.functional.rpc_harness import SPEC
from tests.functional.rpc_harness import node
from tests.functional.rpc_harness import scheduler_api
from tests.functional.rpc_harness import wait_for_log

NODES = models.ComputeNode.__table__


@pytest.fixture
def fleet_url(sqlite_url) -> str:
    """Two nodes: the built-in cpu.percent on both, a file metric on one."""
    engine = sa.create_engine(sqlite_url)
    schema.db_sync(engine)
    with engine.begin() as connection:
        connection.execute(NODES.insert(), [
            node("node-1", 4096, {"cpu.percent": 10.0,
                                   "rack.power.watts": 500.0}),
            node("node-2", 4096, {"cpu.percent": 20.0})])
        # As the monitors write it: the built-in's source is its monitor.
        connection.execute(NODES.update().where(NODES.c.host == "node-2")
                           .values(metrics=json.dumps([{
                               "name": "cpu.percent", "value": 20.0,
                               "source": "psutil.cpu",
                               "timestamp": "2026-11-24T06:00:00Z"}])))
    engine.dispose()
    return sqlite_url


def test_metrics_list(fleet_url, write_config, run_console_script):
    config = write_config({"database": {"connection": fleet_url}})
    table = run_console_script("scheduler-manage", "metrics", "list",
                               config_file=config)
    assert table.returncode == 0, table.stderr
    assert [line.split() for line in table.stdout.splitlines()] == [
        ["metric", "unit", "sources", "hosts"],
        ["-" * 16, "-" * 36, "-" * 15, "-----"],
        ["cpu.percent", "%", "of", "all", "CPUs", "over", "the", "last",
         "interval", "psutil.cpu,test", "2/2"],
        ["rack.power.watts", "-", "test", "1/2"]]
    document = json.loads(run_console_script(
        "scheduler-manage", "metrics", "list", "--format", "json",
        config_file=config).stdout)
    assert document == {"hosts": 2, "metrics": [
        {"name": "cpu.percent",
         "unit": "% of all CPUs over the last interval",
         "sources": ["psutil.cpu", "test"], "hosts": 2},
        {"name": "rack.power.watts", "unit": None, "sources": ["test"],
         "hosts": 1}]}


def test_config_check_names_a_metric_no_host_reports(
        fleet_url, write_config, run_console_script):
    config = write_config({
        "database": {"connection": fleet_url},
        "filter_scheduler": {"weight_classes": "RAMWeigher,MetricsWeigher"},
        "metrics": {"weight_setting": "cpu.percnt=-1, rack.power.watts=-1"},
    })
    result = run_console_script("scheduler-manage", "config", "check",
                                config_file=config)
    assert result.returncode == 2
    assert result.stdout.splitlines() == [
        "[metrics] weight_setting: value 'cpu.percnt': no host reports "
        "cpu.percnt (2 hosts, 2 metrics: 'scheduler-manage metrics list'); "
        "did you mean 'cpu.percent'?"]


def test_config_check_without_the_database_says_it_skipped(
        tmp_path, write_config, run_console_script):
    database = tmp_path / "absent.sqlite"
    config = write_config({
        "database": {"connection": f"sqlite:///{database}"},
        "filter_scheduler": {"weight_classes": "RAMWeigher,MetricsWeigher"},
        "metrics": {"weight_setting": "cpu.percnt=-1"},
    })
    result = run_console_script("scheduler-manage", "config", "check",
                                config_file=config)
    assert (result.returncode, result.stdout) == (0, "configuration OK\n")
    assert result.stderr.startswith(
        "scheduler-manage: note: weight_setting metrics not checked "
        "against the fleet: no database at ")
    assert not database.exists()


def test_service_warns_at_start_of_a_metric_no_host_reports(
        fleet_url, write_config, start_console_script):
    config = write_config({
        "DEFAULT": {"transport_url": "kombu+memory:////"},
        "database": {"connection": fleet_url},
        "filter_scheduler": {"weight_classes": "RAMWeigher,MetricsWeigher"},
        "metrics": {"weight_setting": "cpu.percnt=1", "required": "true"},
    })
    service = start_console_script("scheduler-service", config_file=config)
    stderr = wait_for_log(lambda: service.stderr, SERVING,
                          process=service.popen)
    assert service.stop() == 0
    assert ("WARNING scheduler.cmd.weight_setting_check [-] [metrics] "
            "weight_setting: no host reports cpu.percnt (2 hosts, 2 "
            "metrics: 'scheduler-manage metrics "
            "list'); did you mean 'cpu.percent'?; with [metrics] required = "
            "true, MetricsWeigher removes every host and every request "
            "fails") in stderr, stderr


def test_a_request_failing_for_a_metric_no_host_reports_warns(
        service_config, start_console_script):
    config = service_config({
        "filter_scheduler": {"weight_classes": "RAMWeigher,MetricsWeigher"},
        "metrics": {"weight_setting": "memory.fre=1", "required": "true"}})
    service = start_console_script("scheduler-service", config_file=config)
    wait_for_log(lambda: service.stderr, SERVING, process=service.popen)
    with scheduler_api(config) as api, \
            pytest.raises(exception.NoValidHost, match="required metric "
                          "unavailable: memory.fre"):
        api.select_destinations(SPEC, context={"request_id": "req-fre"})
    stderr = wait_for_log(lambda: service.stderr, "req-fre.* failed for")
    assert service.stop() == 0
    hint = ("[metrics] weight_setting: no "
            "host reports memory.fre (4 hosts, 1 metrics: 'scheduler-manage "
            "metrics list'); did you mean 'memory.free'?")
    warnings = [line.split(" [-] ", 1)[1] for line in stderr.splitlines()
                if " WARNING " in line]
    assert warnings == [
        f"{hint}; with [metrics] required = true, MetricsWeigher removes "
        "every host and every request fails",
        f"select_destinations (request req-fre) failed for {hint}"], stderr
