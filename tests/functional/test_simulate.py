"""``scheduler-manage simulate`` end to end, as operators run it: a
comparison of two configurations on a small workload, the JSON of the
report and its plot; bad input stops it with status 2 and one line."""

import json
import os

import pytest
import sqlalchemy as sa

from scheduler.db import models
from scheduler.db import schema
from scheduler.simulation import runner

#: The fields every run of the JSON report carries.
RUN_FIELDS = {"config", "vms", "placed", "rejected", "hosts_used_peak",
              "hot_host_minutes", "cpu_stddev_mean", "herd_max",
              "migrations", "sim_seconds", "wall_seconds"}
SMALL_RUN = ("--hosts", "8", "--duration", "3600")


@pytest.fixture
def two_configs(write_config):
    nova = write_config({"filter_scheduler": {
        "weight_classes": "RAMWeigher"}}, name="nova.conf")
    balanced = write_config({"scheduler": {
        "default_policy": "evenly_distributed"}}, name="balanced.conf")
    return nova, balanced


def test_comparison_report_and_plot(run_console_script, two_configs,
                                    tmp_path):
    nova, balanced = two_configs
    plot = tmp_path / "out.png"
    result = run_console_script(
        "scheduler-manage", "simulate", "--synthetic", "150", "--seed", "3",
        *SMALL_RUN, "--compare", str(balanced), "--format", "json",
        "--plot", str(plot), config_file=nova, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    first, second = report["runs"]
    assert set(first) >= RUN_FIELDS and set(second) >= RUN_FIELDS
    assert (first["config"], second["config"]) == ("nova.conf",
                                                   "balanced.conf")
    # One workload: the same VMs arrive under both configurations.
    assert first["vms"] == second["vms"] > 0
    for run in (first, second):
        assert run["placed"] + run["rejected"] == run["vms"]
        assert 0 < run["hosts_used_peak"] <= 8
        assert run["herd_max"] >= 1
        assert run["sim_seconds"] == 3600
    assert first["migrations"] == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table_and_trace_file(run_console_script, write_config, tmp_path):
    path = tmp_path / "vmtable.csv"
    path.write_text(
        "vm1,s,d,0,1800,90,40,80,Interactive,2,4\n"
        "vm2,s,d,60,900,30,10,20,Delay-insensitive,>24,>64\n"
        "vm3,s,d,120,60,30,10,20,Delay-insensitive,2,4\n"
        "vm4,s,d,oops,900,30,10,20,Delay-insensitive,2,4\n")
    result = run_console_script(
        "scheduler-manage", "simulate", "--trace", str(path), "--hosts",
        "2", "--duration", "600", config_file=write_config({}),
        timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["figure", "scheduler.conf"]
    assert dict(line.split() for line in lines[2:])["placed"] == "2"
    assert f"{path}:3: skipped: negative lifetime" in result.stderr
    assert f"{path}:4: skipped: not a number" in result.stderr
    assert "2 malformed trace line(s) skipped" in result.stderr


@pytest.mark.parametrize("args, message", [
    (("--synthetic", "10", "--hosts", "0"), "at least one host"),
    (("--trace", "/nonexistent/vmtable.csv"), "cannot read trace"),
])
def test_bad_input_exits_2_with_one_line(run_console_script, write_config,
                                         args, message):
    result = run_console_script("scheduler-manage", "simulate", *args,
                                config_file=write_config({}))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert message in result.stderr


def test_a_plot_into_a_missing_folder_stops_before_simulating(
        run_console_script, write_config):
    # A day of 100,000 VMs would take many minutes: the path is checked
    # first.
    result = run_console_script(
        "scheduler-manage", "simulate", "--synthetic", "100000", "--plot",
        "/nonexistent/plots/out.png", config_file=write_config({}),
        timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "scheduler-manage: error: --plot /nonexistent/plots/out.png: "
        "folder /nonexistent/plots does not exist\n")


def test_configuration_that_fails_config_check_exits_2(run_console_script,
                                                       write_config):
    bad = write_config({"metrics": {"weight_setting": "cpu.percent=abc"}},
                       name="bad.conf")
    result = run_console_script(
        "scheduler-manage", "simulate", "--synthetic", "10",
        "--compare", str(bad), config_file=write_config({}))
    assert result.returncode == 2
    assert "configuration bad.conf does not pass config check" in \
        result.stderr
    assert "weight_setting" in result.stderr


def test_database_with_real_nodes_is_refused(run_console_script,
                                             write_config, sqlite_url):
    engine = sa.create_engine(sqlite_url)
    schema.db_sync(engine)
    now = models.utcnow()
    with engine.begin() as connection:
        connection.execute(models.ComputeNode.__table__.insert().values(
            uuid="11111111-2222-3333-4444-555555555555", host="real-1",
            hypervisor_hostname="real-1", created_at=now, updated_at=now,
            changed_at=now))
    engine.dispose()
    result = run_console_script(
        "scheduler-manage", "simulate", "--synthetic", "10",
        config_file=write_config({"database": {"connection": sqlite_url}}))
    assert result.returncode == 2
    assert "1 compute node(s) that the simulator did not create" in \
        result.stderr


@pytest.mark.parametrize("backend", ["postgresql", "mysql"])
def test_runs_on_a_configured_database_twice(run_console_script,
                                             write_config, request,
                                             backend):
    # The nodes' reports go through the driver's own executemany: each
    # backend's parameter style and stored time format must match what
    # the engine reads. A second run finds the first one's nodes and
    # starts from an empty fleet again.
    url = request.getfixturevalue(f"{backend}_url")
    config = write_config({"database": {"connection": url}})
    results = []
    for _ in range(2):
        result = run_console_script(
            "scheduler-manage", "simulate", "--synthetic", "60", "--hosts",
            "4", "--duration", "900", "--format", "json",
            config_file=config, timeout=300)
        assert result.returncode == 0, result.stderr
        results.append(json.loads(result.stdout)["runs"][0])
    first, second = results
    assert first["placed"] > 0
    for key in ("vms", "placed", "rejected", "hosts_used_peak",
                "hot_host_minutes", "cpu_stddev_mean", "herd_max"):
        assert first[key] == second[key], key
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    table = models.ComputeNode.__table__
    with engine.connect() as connection:
        nodes = connection.execute(sa.select(
            table.c.metrics_updated_at, table.c.metrics)).all()
    engine.dispose()
    # Four phases of a 60 s interval: each node's last report, in
    # simulated time, is one of the last four quarter minutes up to 900 s
    # (a microsecond later where another event ran at that instant).
    start = runner.START
    assert sorted(round((row[0] - start).total_seconds(), 3)
                  for row in nodes) == [855.0, 870.0, 885.0, 900.0]
    for reported, metrics in nodes:
        names = {entry["name"]: entry for entry in json.loads(metrics)}
        assert 0.0 <= names["cpu.percent"]["value"] <= 100.0
        assert names["cpu.percent"]["timestamp"] == \
            reported.isoformat() + "Z"


def test_readings_fleet_and_oracle_on_the_examples(run_console_script,
                                                   write_config, tmp_path):
    examples = os.path.join(os.path.dirname(__file__), os.pardir,
                            os.pardir, "examples", "traces")
    readings = tmp_path / "more-readings.csv"
    readings.write_text("1000000,vm00000,1,2,oops\n"
                        "1000300,nobody,1,2,3\n999700,vm00001,1,2,3\n")
    result = run_console_script(
        "scheduler-manage", "simulate", "--trace",
        os.path.join(examples, "vmtable-readings-sample.csv"),
        "--cpu-readings", os.path.join(examples, "readings-sample.csv"),
        "--cpu-readings", str(readings),
        "--fleet", os.path.join(examples, "fleet-sample.csv"),
        "--oracle", "--format", "json", config_file=write_config(
            {"filter_scheduler": {"weight_classes": "RAMWeigher"}},
            name="nova.conf"), timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    nova, oracle = report["runs"]
    assert (nova["config"], oracle["config"]) == ("nova.conf", "oracle")
    assert report["hosts"] == 4
    for run in (nova, oracle):
        assert run["placed"] == run["vms"] == 24
        assert run["readings_used"] > 1000
        assert (run["readings_malformed"], run["readings_out_of_order"],
                run["readings_unknown_vm"]) == (1, 1, 1)
        assert run["days"] and run["days"][0]["placed"] == 24
        assert 0 <= run["p95_host_cpu"] <= 100
    assert oracle["migrations"] == 0
    assert oracle["hot_host_minutes"] <= nova["hot_host_minutes"]
    assert f"{readings}:1: skipped: not a number" in result.stderr
    assert "2 readings line(s) skipped" in result.stderr


def test_the_load_aware_examples_run_on_readings(run_console_script):
    """The two recommended configurations pass config check and run as
    given, InstanceLoadWeigher over instance histories included."""
    root = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                        "examples")
    traces = os.path.join(root, "traces")
    configs = [os.path.join(root, "simulate", name) for name in (
        "load-aware.conf", "load-aware-balanced.conf")]
    result = run_console_script(
        "scheduler-manage", "simulate", "--trace",
        os.path.join(traces, "vmtable-readings-sample.csv"),
        "--cpu-readings", os.path.join(traces, "readings-sample.csv"),
        "--fleet", os.path.join(traces, "fleet-sample.csv"),
        "--compare", configs[1], "--format", "json",
        config_file=configs[0], timeout=180)
    assert result.returncode == 0, result.stderr
    placement, balanced = json.loads(result.stdout)["runs"]
    assert placement["config"] == "load-aware.conf"
    assert balanced["config"] == "load-aware-balanced.conf"
    for run in (placement, balanced):
        assert run["placed"] == run["vms"] == 24
        assert run["hot_threshold"] == 80
    assert placement["migrations"] == 0


@pytest.mark.parametrize("args, message", [
    (("--synthetic", "10", "--fleet", "x.csv", "--hosts", "3"),
     "--fleet and --hosts are exclusive"),
    (("--synthetic", "10", "--fleet", "/nonexistent/fleet.csv"),
     "cannot read fleet"),
    (("--synthetic", "10", "--cpu-readings", "/nonexistent/r.csv"),
     "cannot read readings"),
    (("--synthetic", "10", "--cpu-readings", __file__), "needs --trace"),
])
def test_bad_fleet_and_readings_exit_2(run_console_script, write_config,
                                       args, message):
    result = run_console_script("scheduler-manage", "simulate", *args,
                                config_file=write_config({}))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert message in result.stderr
