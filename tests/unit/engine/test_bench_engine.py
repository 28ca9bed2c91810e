"""tools/bench_engine.py: a configuration file benchmarked beside the
default one, on a fleet with claimed instances reporting their load."""

import importlib.util
import json
import os
import random

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import schema

TOOLS = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                     os.pardir, "tools")

# examples/simulate/load-aware.conf's text, kept here so that the test
# does not depend on the example staying as it is.
LOAD_AWARE = """\
[filter_scheduler]
weight_classes = InstanceLoadWeigher
[metrics]
instance_history_window = 6h
expected_window = 6h
expected_instance_cpu = measured
expected_fallback_percent = 25
instance_load_risk_factor = 1.0
"""


@pytest.fixture(scope="module")
def bench_engine():
    spec = importlib.util.spec_from_file_location(
        "bench_engine", os.path.join(TOOLS, "bench_engine.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_file_wins_over_the_bench_defaults(bench_engine, tmp_path):
    path = tmp_path / "load-aware.conf"
    path.write_text(LOAD_AWARE)
    conf = bench_engine.make_conf("sqlite://", [str(path)])
    assert conf.filter_scheduler.weight_classes == ["InstanceLoadWeigher"]
    assert conf.metrics.instance_history_window == 6 * 3600
    # What the file leaves alone stays the bench's.
    assert conf.filter_scheduler.enabled_filters == bench_engine.FILTERS
    assert (bench_engine.make_conf("sqlite://").filter_scheduler
            .weight_classes == bench_engine.WEIGHERS)


def test_default_and_load_aware_lines(bench_engine, tmp_path):
    path = tmp_path / "load-aware.conf"
    path.write_text(LOAD_AWARE)
    # Small and short: the window lasts two full-load intervals (1 s).
    runs = {name: bench_engine.bench(
        20, 5, f"sqlite:///{tmp_path}/{name}.sqlite", 1, False, 0,
        config_files=files, per_host=3, warm_reports=2)
        for name, files in (("default", []), ("load", [str(path)]))}
    assert runs["default"]["weighers"] == bench_engine.WEIGHERS
    assert runs["load"]["weighers"] == ["InstanceLoadWeigher"]
    default = bench_engine._line("default", runs["default"], None)
    load = bench_engine._line("load-aware.conf", runs["load"],
                              runs["default"])
    assert default.startswith("config=default hosts=20 ")
    assert load.startswith("config=load-aware.conf hosts=20 ")
    for line in (default, load):
        fields = dict(part.split("=") for part in line.split())
        for name in ("p50_ms", "cpu_p50_ms", "p99_ms", "bytes_per_host",
                     "bytes_per_host_after", "decisions"):
            assert float(fields[name]) >= 0, name
    assert "p50_ratio" not in default
    fields = dict(p.split("=") for p in load.split())
    assert float(fields["p50_ratio"]) == pytest.approx(
        runs["load"]["p50_ms"] / runs["default"]["p50_ms"], abs=0.01)
    assert float(fields["cpu_p50_ratio"]) == pytest.approx(
        runs["load"]["cpu_p50_ms"] / runs["default"]["cpu_p50_ms"],
        abs=0.01)


def test_instances_are_claimed_and_reported(bench_engine, tmp_path):
    conf = bench_engine.make_conf(f"sqlite:///{tmp_path}/fleet.sqlite")
    engine = db_api.get_engine(conf)
    schema.db_sync(engine)
    instances = bench_engine.build_fleet(engine, 4, random.Random(1), 3)
    bench_engine.report_all(engine, instances, random.Random(2))
    with engine.begin() as connection:
        claimed = set(connection.execute(sa.select(
            models.Allocation.__table__.c.instance_uuid)).scalars())
        node = connection.execute(sa.select(
            models.ComputeNode.__table__.c.metrics,
            models.ComputeNode.__table__.c.instance_metrics,
            models.ComputeNode.__table__.c.generation).where(
            models.ComputeNode.__table__.c.host == "node-00000")).one()
    db_api.dispose_engines()
    assert claimed == {u for placed in instances.values() for u, _ in placed}
    assert node.generation == 1
    # Apart from the host's metrics, as the agent writes them.
    assert not [entry for entry in json.loads(node.metrics)
                if "instance" in entry]
    reported = {entry["instance"] for entry in json.loads(
        node.instance_metrics) if entry["name"] == "instance.cpu.percent"}
    assert reported == {u for u, _ in instances["node-00000"]}


def test_paired_decisions_of_two_configurations(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(TOOLS)
    import bench_engine_paired
    path = tmp_path / "load-aware.conf"
    path.write_text(LOAD_AWARE)
    result = bench_engine_paired.paired(12, 6, str(path), per_host=2,
                                        warm_reports=2)
    assert result["decisions"] == 6 and result["config"] == "load-aware.conf"
    assert result["p50_ratio"] == pytest.approx(
        result["config_p50_ms"] / result["default_p50_ms"])
    assert result["cpu_p50_ratio"] == pytest.approx(
        result["config_cpu_p50_ms"] / result["default_cpu_p50_ms"])
    assert result["pair_ratio_median"] > 0
    assert result["default_reloads"] >= 0 and result["config_reloads"] >= 0
