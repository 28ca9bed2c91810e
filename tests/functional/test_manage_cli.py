"""``scheduler-manage hosts list``, ``hosts show``, ``explain`` and
``config check`` as operators run them, against a database holding a
small synthetic fleet."""

import csv
import datetime
import io
import json

import pytest
import sqlalchemy as sa

from scheduler.cmd import output
from scheduler.db import models
from tests.functional.processes import run_manage
from tests.functional.rpc_harness import node

GIB = 2**30



def test_explain_json(fleet, run_console_script):
    result = run_manage(run_console_script, fleet, "explain", "--ram", "4096",
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
        "raw": 1.0, "normalized": 0.0, "multiplier": 1.0, "weighted": 0.0}
    assert decision["policy"] is None


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_explain_names_the_policy_and_multiplied_weights(
        fleet, db_url, write_config, run_console_script):
    config = write_config({"database": {"connection": db_url},
                           "scheduler": {"cluster_policies":
                                         "c1:power_saving"}},
                          name="policy.conf")
    args = ("explain", "--ram", "4096", "--cluster", "c1")
    table = run_manage(run_console_script, config, *args)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0] == "Policy: power_saving"
    assert "RAMWeigher x-1, CPUWeigher x-1, DiskWeigher x-1" in lines[1]
    # power_saving packs: the least free RAM that fits wins.
    assert lines[4].split()[:2] == ["*", "garbled"]
    decision = json.loads(run_manage(run_console_script, config, *args,
                                     "--format", "json").stdout)
    assert decision["policy"] == "power_saving"
    for host in decision["hosts"]:
        if host["weight"] is not None:
            ram = host["weights"]["RAMWeigher"]
            assert ram["weighted"] == -ram["normalized"]
            assert host["weight"] == pytest.approx(sum(
                term["weighted"] for term in host["weights"].values()))


def test_garbled_metrics_node_is_scheduled_for_what_it_has(
        fleet, run_console_script):
    result = run_manage(run_console_script, fleet, "explain", "--ram", "8192",
                     "--format", "json")
    assert result.returncode == 0, result.stderr
    decision = json.loads(result.stdout)
    assert "garbled" in decision["selected"]
    assert "garbled" in result.stderr  # the bad row is reported in the log


def test_explain_nothing_fits_prints_histogram(fleet, run_console_script):
    result = run_manage(run_console_script, fleet, "explain", "--ram",
                     "999999", "--format", "json")
    decision = json.loads(result.stdout)
    assert decision["selected"] == []
    assert decision["summary"] == ("0/5 hosts available: 4 RamFilter "
                                   "(insufficient RAM), 1 ComputeFilter "
                                   "(disabled)")
    table = run_manage(run_console_script, fleet, "explain", "--ram", "999999")
    assert "No valid host: 0/5 hosts available" in table.stdout


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("spec", ["resources:memory.free=maxx",
                                  "resources:x.y=<abc",
                                  "resources:net.bw=>=1.5Q",
                                  "no-equals-sign"])
def test_explain_malformed_extra_spec_exits_2(fleet, run_console_script,
                                              spec):
    result = run_manage(run_console_script, fleet, "explain", "--extra-spec",
                     spec)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert spec.partition("=")[0] in lines[0]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_hosts_list_formats(fleet, run_console_script):
    table = run_manage(run_console_script, fleet, "hosts", "list")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:2] == ["host", "nodename"]
    assert len(lines) == 2 + 5
    states = {line.split()[0]: line.split()[-1] for line in lines[2:]}
    assert states == {"big": "up", "mid": "up", "small": "up",
                      "garbled": "up", "off": "disabled"}
    small = next(line.split() for line in lines if line.startswith("small"))
    # Nodename as the host: not repeated; free/total (cpu_allocation_ratio
    # 16), nothing pending.
    assert small[1:8] == ["-", "c1", "nova", "128/128", "2048/2048",
                          "100/100", "-"]

    as_json = json.loads(run_manage(run_console_script, fleet, "hosts", "list",
                                 "--format", "json").stdout)
    by_host = {h["host"]: h for h in as_json}
    assert by_host["small"]["ram_mb_total"] == 2048
    assert by_host["garbled"]["metrics"] == 0
    assert by_host["off"]["state"] == "disabled"
    assert 0 <= by_host["big"]["metric_age_s"] < 60

    as_csv = list(csv.DictReader(io.StringIO(run_manage(
        run_console_script, fleet, "hosts", "list", "--format",
        "csv").stdout)))
    assert {row["host"] for row in as_csv} == set(by_host)
    assert as_csv[0]["vcpus_total"] == str(by_host[as_csv[0]["host"]][
        "vcpus_total"])


def _add_node_with_claim(db_url: str) -> None:
    """``odd``: host ``odd`` on node ``odd-node``, disabled with a reason,
    one malformed metric, and a claim newer than its last report."""
    engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    now = models.utcnow()
    before = now - datetime.timedelta(minutes=1)
    stamp = before.isoformat() + "Z"
    with engine.begin() as connection:
        node_id = connection.execute(
            models.ComputeNode.__table__.insert().returning(
                models.ComputeNode.__table__.c.id),
            node("odd", 8192, json.dumps([
                {"name": "memory.free", "value": 4 * GIB,
                 "timestamp": stamp, "source": "libvirt"},
                {"name": "cpu.percent", "value": "high",
                 "timestamp": stamp}]),
                  hypervisor_hostname="odd-node", disabled=True,
                  disabled_reason="maintenance",
                  metrics_updated_at=before)).scalar_one()
        connection.execute(models.Allocation.__table__.insert(), [{
            "uuid": "11111111-1111-1111-1111-111111111111",
            "instance_uuid": "22222222-2222-2222-2222-222222222222",
            "compute_node_id": node_id, "vcpus": 2, "memory_mb": 1024,
            "disk_gb": 10, "instance_group": "web", "created_at": now}])
    engine.dispose()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_hosts_show_formats(fleet, db_url, run_console_script):
    _add_node_with_claim(db_url)
    table = run_manage(run_console_script, fleet, "hosts", "show", "odd-node")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    # One "name value" line per field of the host record.
    fields = dict(line.split(None, 1)
                  for line in lines[:len(output.HOST_FIELDS)])
    assert fields["host"] == "odd" and fields["nodename"] == "odd-node"
    assert fields["state"] == "disabled"
    assert fields["disabled_reason"] == "maintenance"
    assert (fields["pending_claims"], fields["pending_vcpus"],
            fields["pending_ram_mb"]) == ("1", "2", "1024")
    memory = next(line.split() for line in lines
                  if line.startswith("memory.free"))
    # 1024 MB claimed since the report: the adjusted value is lower.
    assert memory[1:3] == [str(4 * GIB), str(4 * GIB - 1024 * 2**20)]
    assert memory[-1] == "libvirt" and 59 <= float(memory[3]) < 120
    assert "bad metrics: cpu.percent" in lines
    assert "networks: public" in lines
    assert "instances: 22222222-2222-2222-2222-222222222222" in lines
    assert "server groups: web" in lines

    # By host name as well, since the host has a single node.
    as_json = json.loads(run_manage(run_console_script, fleet, "hosts", "show",
                                 "odd", "--format", "json").stdout)
    assert as_json["nodename"] == "odd-node"
    assert as_json["bad_metrics"] == ["cpu.percent"]
    assert as_json["cpu_info"] == {"arch": "x86_64"}
    assert [m["name"] for m in as_json["metrics"]] == ["memory.free"]

    as_csv = list(csv.DictReader(io.StringIO(run_manage(
        run_console_script, fleet, "hosts", "show", "odd", "--format",
        "csv").stdout)))
    assert {"field", "metric", "bad_metric", "cpu_info", "network",
            "instance", "server_group"} == {row["kind"] for row in as_csv}
    assert next(row["value"] for row in as_csv if row["kind"] == "field"
                and row["name"] == "state") == "disabled"


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_hosts_show_unknown_host_exits_1(fleet, run_console_script):
    result = run_manage(run_console_script, fleet, "hosts", "show", "nope")
    assert result.returncode == 1
    assert result.stdout == ""
    # After the host cache's warning about "garbled".
    assert result.stderr.strip().splitlines()[-1] == (
        "scheduler-manage: error: no compute node 'nope' (5 known; see "
        "hosts list)")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_explain_unknown_cluster_exits_1_naming_the_clusters(
        fleet, run_console_script):
    result = run_manage(run_console_script, fleet, "explain", "--cluster",
                        "c11")
    assert (result.returncode, result.stdout) == (1, "")
    # After the log's warning about the garbled node.
    assert result.stderr.splitlines()[-1] == (
        "scheduler-manage: error: no compute node is in cluster 'c11' "
        "(clusters: c1); did you mean 'c1'?")
    balanced = run_manage(run_console_script, fleet, "balance", "--cluster",
                          "c11", "--dry-run")
    assert (balanced.returncode, balanced.stdout) == (1, "")
    assert balanced.stderr.splitlines()[-1] == result.stderr.splitlines()[-1]


def test_explain_list_and_balance_on_an_empty_fleet_say_how_to_add_a_node(
        sqlite_url, write_config, run_console_script):
    config = write_config({"database": {"connection": sqlite_url}})
    assert run_manage(run_console_script, config, "db", "sync"
                      ).returncode == 0
    explained = run_manage(run_console_script, config, "explain",
                           "--cluster", "nosuchcluster")
    assert (explained.returncode, explained.stdout) == (1, "")
    assert explained.stderr.startswith(
        "scheduler-manage: error: no compute node is registered in "
        f"{sqlite_url}: run compute-monitor on each compute node")
    listed = run_manage(run_console_script, config, "hosts", "list")
    assert listed.returncode == 0
    assert listed.stdout.startswith("host  nodename")
    assert listed.stderr.startswith(
        "scheduler-manage: note: no compute node is registered")
    balanced = run_manage(run_console_script, config, "balance")
    assert balanced.returncode == 0
    assert balanced.stderr.startswith(
        "scheduler-manage: note: no compute node is registered")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_explain_prints_a_request_warning_once_on_stderr(
        fleet, run_console_script):
    result = run_manage(run_console_script, fleet, "explain",
                        "--extra-spec", "resource:cpu.percent=<50")
    assert result.returncode == 0, result.stderr
    assert "resource:cpu.percent" not in result.stdout
    assert result.stderr.count("resource:cpu.percent") == 1
    assert ("scheduler-manage: warning: extra spec resource:cpu.percent "
            "ignored: the scheduler reads no scope resource:; did you mean "
            "resources:?") in result.stderr


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_explain_table_and_csv(fleet, run_console_script):
    args = ("explain", "--ram", "4096")
    table = run_manage(run_console_script, fleet, *args)
    assert table.returncode == 0, table.stderr
    rows = {line.split()[1] if line.startswith(("*", "alt")) else
            line.split()[0]: line for line in table.stdout.splitlines()[2:]}
    # The most free RAM wins; max_attempts 3: two alternates.
    assert rows["big"].startswith("*  ")
    assert rows["mid"].startswith("alt")
    assert rows["garbled"].startswith("alt")
    # Filter, reason and detail, in that order.
    small = rows["small"]
    assert small.index("RamFilter") < small.index("insufficient RAM") < \
        small.index("needs 4096 MB")
    off = rows["off"].split()
    assert off[off.index("ComputeFilter") + 1] == "disabled"

    as_csv = list(csv.DictReader(io.StringIO(run_manage(
        run_console_script, fleet, *args, "--format", "csv").stdout)))
    assert [(row["sel"], row["host"]) for row in as_csv[:3]] == [
        ("*", "big"), ("alt", "mid"), ("alt", "garbled")]
    by_host = {row["host"]: row for row in as_csv}
    assert by_host["small"]["filtered_by"] == "RamFilter"
    assert by_host["small"]["weight"] == ""
    assert float(by_host["big"]["RAMWeigher.raw"]) > float(
        by_host["mid"]["RAMWeigher.raw"])


def test_config_check_good_file(sqlite_url, write_config,
                                run_console_script, tmp_path):
    config = write_config({
        "DEFAULT": {"transport_url": "rabbit://guest:guest@127.0.0.1/"},
        "database": {"connection": sqlite_url},
        "metrics": {"weight_setting": "cpu.percent=-1.0, memory.free=1"},
        "filter_scheduler": {"weight_maximums": "RAMWeigher:8192",
                             "weight_classes": "RAMWeigher,MetricsWeigher"},
        "scheduler": {"cluster_policies": "c1:power_saving"},
        "policy:quiet": {"balancer": "none"},
        "oslo_messaging_rabbit": {"heartbeat_timeout_threshold": 30},
        "compute_monitor": {"interval": 30},
    })
    result = run_console_script("scheduler-manage", "config", "check",
                                config_file=config)
    assert (result.returncode, result.stdout) == (0, "configuration OK\n"), \
        result.stderr
    # Nothing was created: no database file, no state written.
    assert not (tmp_path / "scheduler.sqlite").exists()


def test_config_check_lists_every_problem(write_config, run_console_script,
                                          tmp_path):
    policies = tmp_path / "policies.json"
    policies.write_text(json.dumps([{"id": "a"}, 7]))
    config = write_config({
        "DEFAULT": {"transport_url": "rabbit//broker"},
        "database": {"connection": "not a url"},
        "metrics": {"weight_setting": "cpu.percent=high", "max_age": -1},
        "filter_scheduler": {
            "host_subset_size": 0,
            "enabled_filters": "ComputeFilter,NoSuchFilter",
            "weight_classes": "RAMWeigher,NoSuchWeigher",
            "weight_maximums": "RAMWeigher:-1,CPUWeigher:x"},
        "filter_schedular": {"enabled_filters": "RamFilter"},
        "scheduler": {"default_policy": "nope", "colour": "blue"},
        "migration": {"policies_file": policies},
    })
    result = run_console_script("scheduler-manage", "config", "check",
                                config_file=config)
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    expected = [
        ("[DEFAULT] transport_url: value 'rabbit//broker':",),
        ("[database] connection: value",),
        ("[metrics] weight_setting: value 'cpu.percent=high':",
         "not a number"),
        ("[metrics] max_age: value '-1':", "greater than or equal to 0"),
        ("[filter_scheduler] host_subset_size: value '0':",),
        ("[filter_scheduler] enabled_filters: value 'NoSuchFilter':",
         "scheduler.filters"),
        ("[filter_scheduler] weight_classes: value 'NoSuchWeigher':",
         "scheduler.weighers"),
        ("[filter_scheduler] weight_maximums: value '-1':",),
        ("[filter_scheduler] weight_maximums: value 'x':",),
        ("[filter_schedular] enabled_filters: value '***':",
         "unknown group"),
        ("[scheduler] colour: value '***':", "unknown option"),
        ("[scheduler] default_policy: value 'nope':", "unknown policy"),
        ("[migration] policies_file:", "policy 'a'"),
        ("[migration] policies_file:", "policy '#1'"),
    ]
    for parts in expected:
        matching = [line for line in lines
                    if line.startswith(parts[0]) and all(
                        part in line for part in parts[1:])]
        assert len(matching) == 1, (parts, lines)
    assert len(lines) == len(expected), lines
    assert result.stderr.strip() == (
        f"scheduler-manage: error: {len(expected)} configuration "
        f"problem(s) in {config}")


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
