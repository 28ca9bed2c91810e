"""``scheduler-manage hosts list`` and ``explain`` as operators run them,
against a database holding a small synthetic fleet."""

import csv
import io
import json

import pytest
import sqlalchemy as sa

from scheduler.db import migration
from scheduler.db import models

GIB = 2**30


def _node(name: str, memory_mb: int, metrics, **extra) -> dict:
    now = models.utcnow()
    return {"uuid": f"00000000-0000-0000-0000-{abs(hash(name)) % 10**12:012d}",
            "host": name, "hypervisor_hostname": name, "cluster": "c1",
            "availability_zone": "nova", "vcpus": 8, "memory_mb": memory_mb,
            "local_gb": 100, "memory_mb_used": 0, "local_gb_used": 0,
            "cpu_info": json.dumps({"arch": "x86_64"}),
            "networks": json.dumps(["public"]),
            "metrics": metrics if isinstance(metrics, str) else json.dumps([
                {"name": k, "value": v, "source": "test",
                 "timestamp": now.isoformat() + "Z"}
                for k, v in metrics.items()]),
            "metrics_updated_at": now, "disabled": False, "generation": 0,
            "created_at": now, "updated_at": now, "changed_at": now,
            "ram_allocation_ratio": 1.0, **extra}


@pytest.fixture
def fleet(db_url, write_config):
    engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    migration.db_sync(engine)
    with engine.begin() as connection:
        connection.execute(models.ComputeNode.__table__.insert(), [
            _node("big", 65536, {"memory.free": 60 * GIB,
                                 "network.rx.bps": 90e6}),
            _node("mid", 32768, {"memory.free": 30 * GIB,
                                 "network.rx.bps": 10e6}),
            _node("small", 2048, {"memory.free": 1 * GIB,
                                  "network.rx.bps": 1e6}),
            # Garbage metrics: still scheduled on for what it has.
            _node("garbled", 16384, "{not json"),
            _node("off", 65536, {"memory.free": 60 * GIB}, disabled=True),
        ])
    engine.dispose()
    return write_config({"database": {"connection": db_url}})


def _manage(run_console_script, config, *args):
    return run_console_script("scheduler-manage", *args, config_file=config)


def test_explain_json(fleet, run_console_script):
    result = _manage(run_console_script, fleet, "explain", "--ram", "4096",
                     "--extra-spec", "resources:network.rx.bps=<85M",
                     "--extra-spec", "resources:memory.free=max",
                     "--format", "json")
    assert result.returncode == 0, result.stderr
    decision = json.loads(result.stdout)
    hosts = {h["host"]: h for h in decision["hosts"]}
    assert decision["selected"][0] == "mid"
    assert decision["summary"] == ""
    assert hosts["big"]["filtered_by"] == "ResourcesThresholdFilter"
    assert hosts["big"]["reason"] == "network.rx.bps<85M"
    assert hosts["small"]["filtered_by"] == "RamFilter"
    assert hosts["off"]["filtered_by"] == "ComputeFilter"
    # No metrics at all: the threshold cannot be checked on it.
    assert hosts["garbled"]["filtered_by"] == "ResourcesThresholdFilter"
    # The only candidate: min-max scaling over one host gives 0.
    assert hosts["mid"]["weights"]["ResourcesWeigher"] == {
        "raw": 1.0, "normalized": 0.0}


def test_garbled_metrics_node_is_scheduled_for_what_it_has(
        fleet, run_console_script):
    result = _manage(run_console_script, fleet, "explain", "--ram", "8192",
                     "--format", "json")
    assert result.returncode == 0, result.stderr
    decision = json.loads(result.stdout)
    assert "garbled" in decision["selected"]
    assert "garbled" in result.stderr  # the bad row is reported in the log


def test_explain_nothing_fits_prints_histogram(fleet, run_console_script):
    result = _manage(run_console_script, fleet, "explain", "--ram",
                     "999999", "--format", "json")
    decision = json.loads(result.stdout)
    assert decision["selected"] == []
    assert decision["summary"] == ("0/5 hosts available: 4 RamFilter "
                                   "(insufficient RAM), 1 ComputeFilter "
                                   "(disabled)")
    table = _manage(run_console_script, fleet, "explain", "--ram", "999999")
    assert "No valid host: 0/5 hosts available" in table.stdout


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("spec", ["resources:memory.free=maxx",
                                  "resources:x.y=<abc",
                                  "resources:net.bw=>=1.5Q",
                                  "no-equals-sign"])
def test_explain_malformed_extra_spec_exits_2(fleet, run_console_script,
                                              spec):
    result = _manage(run_console_script, fleet, "explain", "--extra-spec",
                     spec)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert spec.partition("=")[0] in lines[0]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_hosts_list_formats(fleet, run_console_script):
    table = _manage(run_console_script, fleet, "hosts", "list")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:2] == ["host", "nodename"]
    assert len(lines) == 2 + 5
    states = {line.split()[0]: line.split()[-1] for line in lines[2:]}
    assert states == {"big": "up", "mid": "up", "small": "up",
                      "garbled": "up", "off": "disabled"}

    as_json = json.loads(_manage(run_console_script, fleet, "hosts", "list",
                                 "--format", "json").stdout)
    by_host = {h["host"]: h for h in as_json}
    assert by_host["small"]["ram_mb_total"] == 2048
    assert by_host["garbled"]["metrics"] == 0

    as_csv = list(csv.DictReader(io.StringIO(_manage(
        run_console_script, fleet, "hosts", "list", "--format",
        "csv").stdout)))
    assert {row["host"] for row in as_csv} == set(by_host)
    assert as_csv[0]["vcpus_total"] == str(by_host[as_csv[0]["host"]][
        "vcpus_total"])


def test_demo_runs_on_embedded_defaults(write_config, run_console_script,
                                        tmp_path):
    # Only state_path is set: the demo brings its own SQLite file and the
    # in-memory bus.
    config = write_config({"DEFAULT": {"state_path": tmp_path / "state"}})
    result = run_console_script("scheduler-manage", "demo",
                                config_file=config, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "real metrics) and 5 simulated nodes" in out
    assert out.count("instance 1:") == 4 and "instance 3:" in out
    assert "ResourcesThresholdFilter  network.rx.bps<85M" in out
    assert "NoValidHost: 0/6 hosts available: 6 RamFilter" in out
    assert (tmp_path / "state" / "demo.sqlite").exists()
    # A second run starts from the same fleet: claims were reset.
    again = run_console_script("scheduler-manage", "demo",
                               config_file=config, timeout=120)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("instance 1:") == 4
