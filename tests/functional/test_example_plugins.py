"""The example plugin package of docs/plugin-guide.md, built and installed
as a plugin author would, and run by the real programs.

The package is built with the build tools of the interpreter running the
tests (no build isolation: nothing is downloaded) and installed with
``pip install --target`` into a directory of its own, which the programs
get on ``PYTHONPATH``: stevedore finds its entry points there exactly as
in a site-packages, and the environment running the tests is left as it
was.
"""

import json
import os
import subprocess
import sys

import pytest
import sqlalchemy as sa

from scheduler.db import models
from scheduler.db import schema
from tests.functional.rpc_harness import node

# What a one-shot `scheduler-manage balance --dry-run` would do: one
# balancing tick that claims and records nothing.
_DRY_RUN_TICK = """
import json, sys
from scheduler import conf
from scheduler.placement.balance_planner import BalancePlanner
conf.CONF(["--config-file", sys.argv[1]], project="scheduler")
planned = BalancePlanner(conf.CONF).balance(dry_run=True)
print(json.dumps([migration.as_dict() for migration in planned]))
"""


def _load(value: float) -> dict:
    """The metrics of a node reporting a 1-minute load average."""
    return {"loadavg.1m": value, "cpu.percent": 50.0,
            "memory.free": 30 * 2**30}


@pytest.fixture
def fleet_url(sqlite_url: str) -> str:
    """Four 8-vCPU nodes: loaded (2.0 per vCPU, running two instances),
    busy (0.75), calm (0.125) and quiet (no load average)."""
    engine = sa.create_engine(sqlite_url, poolclass=sa.pool.NullPool)
    schema.db_sync(engine)
    nodes = models.ComputeNode.__table__
    with engine.begin() as connection:
        connection.execute(nodes.insert(), [
            node("loaded", 32768, _load(16.0)),
            node("busy", 32768, _load(6.0)),
            node("calm", 32768, _load(1.0)),
            node("quiet", 32768, {"cpu.percent": 50.0,
                                   "memory.free": 30 * 2**30}),
        ])
        loaded = connection.execute(sa.select(nodes.c.id).where(
            nodes.c.host == "loaded")).scalar_one()
        connection.execute(models.Allocation.__table__.insert(), [
            {"uuid": f"a{vcpus}", "instance_uuid": f"instance-{vcpus}",
             "compute_node_id": loaded, "vcpus": vcpus, "memory_mb": 1024,
             "disk_gb": 10, "created_at": models.utcnow()}
            for vcpus in (1, 2)])
    engine.dispose()
    return sqlite_url


def test_compute_monitor_reports_the_load_average(
        sqlite_url, plugin_env, write_config, run_console_script):
    config = write_config({
        "DEFAULT": {"host": "node-1"},
        "database": {"connection": sqlite_url},
        "compute_monitor": {"monitors": "cpu,loadavg"},
    })
    sync = run_console_script("scheduler-manage", "db", "sync",
                              config_file=config)
    assert sync.returncode == 0, sync.stderr
    result = run_console_script("compute-monitor", "--once",
                                config_file=config, env=plugin_env)
    assert result.returncode == 0, result.stderr
    metrics = {m["name"]: m for m in json.loads(result.stdout)["metrics"]}
    assert {"cpu.percent", "loadavg.1m", "loadavg.5m",
            "loadavg.15m"} <= metrics.keys()
    assert metrics["loadavg.1m"]["value"] >= 0
    assert metrics["loadavg.1m"]["source"] == "os.getloadavg"
    assert metrics["loadavg.1m"]["timestamp"].endswith("Z")


def test_explain_shows_the_filter_and_the_weigher(
        fleet_url, plugin_env, write_config, run_console_script):
    config = write_config({
        "database": {"connection": fleet_url},
        "filter_scheduler": {
            "enabled_filters": "ComputeFilter,RamFilter,MaxLoadFilter",
            "weight_classes": "RAMWeigher,LoadAverageWeigher"},
    })
    result = run_console_script("scheduler-manage", "explain", "--ram",
                                "1024", "--format", "json",
                                config_file=config, env=plugin_env)
    assert result.returncode == 0, result.stderr
    decision = json.loads(result.stdout)
    hosts = {host["host"]: host for host in decision["hosts"]}
    assert hosts["loaded"]["filtered_by"] == "MaxLoadFilter"
    assert hosts["loaded"]["reason"] == "loadavg.1m per vCPU above 1.5"
    # No load average: not filtered, weighed as unavailable, last.
    assert hosts["quiet"]["filtered_by"] is None
    assert hosts["quiet"]["weights"]["LoadAverageWeigher"]["raw"] is None
    assert hosts["busy"]["weights"]["LoadAverageWeigher"]["raw"] == 0.75
    assert hosts["calm"]["weights"]["LoadAverageWeigher"]["raw"] == 0.125
    assert decision["selected"] == ["calm", "busy", "quiet"]


def test_balancer_moves_the_smallest_instance_off_the_loaded_host(
        fleet_url, plugin_env, write_config):
    config = write_config({
        "database": {"connection": fleet_url},
        "filter_scheduler": {"enabled_filters": "ComputeFilter,RamFilter"},
        "scheduler": {"default_policy": "by_load"},
        "policy:by_load": {"balancer": "max_load",
                           "balancer_parameters": "HighUtilization:80"},
    })
    result = subprocess.run(
        [sys.executable, "-c", _DRY_RUN_TICK, str(config)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, **plugin_env})
    assert result.returncode == 0, result.stderr
    planned, = json.loads(result.stdout)
    # loaded is at 200 % of its vCPUs; busy (75 %) would reach 87.5 %
    # with the instance's vCPU, calm (12.5 %) stays at 25 %.
    assert (planned["instance_uuid"], planned["source_host"],
            planned["dest_host"]) == ("instance-1", "loaded", "calm")
    assert planned["allocation_id"] is None  # a dry run claims nothing


@pytest.mark.parametrize("group, option, value, named", [
    # Registered from the package's oslo.config.opts entry point and
    # checked with the scheduler's own options.
    ("example_plugins", "max_load_per_vcpu", "-1", "[example_plugins]"),
    ("policy:by_load", "balancer_parameters", "HighUtilization:120",
     "[policy:by_load]"),
])
def test_bad_plugin_configuration_stops_start_up(
        fleet_url, plugin_env, write_config, run_console_script,
        group, option, value, named):
    sections = {
        "database": {"connection": fleet_url},
        "filter_scheduler": {"enabled_filters": "MaxLoadFilter"},
        "scheduler": {"default_policy": "by_load"},
        "policy:by_load": {"balancer": "max_load"},
    }
    sections.setdefault(group, {})[option] = value
    result = run_console_script("scheduler-manage", "explain",
                                config_file=write_config(sections),
                                env=plugin_env)
    assert result.returncode == 2
    line, = result.stderr.strip().splitlines()
    assert option in line
    assert named in line
