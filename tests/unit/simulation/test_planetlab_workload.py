"""tools/planetlab_workload.py's files (read back by the simulator's own
readers) and tools/bench_quality_draws.py's summary."""

import importlib.util
import math
import os
import sys

import numpy as np
import pytest

from scheduler.simulation import fleet
from scheduler.simulation import readings
from scheduler.simulation import trace

TOOLS = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                     os.pardir, "tools")


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(TOOLS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pw():
    return _tool("planetlab_workload")


def test_a_draw_reads_back_and_is_sized_on_its_peak(pw, tmp_path):
    rng = np.random.default_rng(1)
    series = pw.synthesise(rng, 30, 2 * pw.SLOTS_PER_DAY)
    created = rng.integers(0, pw.SLOTS_PER_DAY, 30) * pw.SLOT
    cores, memory = pw.sizes(rng, 30)
    sized = pw.write_draw(str(tmp_path), series, created, cores, memory,
                          0.5)
    spec = fleet.read_fleet(str(tmp_path / "fleet.csv"))
    assert spec.hosts == sized["nodes"]
    assert 0.25 < sized["peak_share"] <= 0.5
    workload = trace.read_vmtable(str(tmp_path / "vmtable.csv"))
    assert not workload.skipped and len(workload) == 30
    overlay = readings.Overlay(workload, 0,
                               [str(tmp_path / "readings.csv")])
    for slot in range(2 * pw.SLOTS_PER_DAY):
        overlay.utilisation(slot)
    counts = overlay.counts()
    assert counts.malformed == counts.out_of_order == 0
    alive = sum(2 * pw.SLOTS_PER_DAY - c // pw.SLOT for c in created)
    assert counts.used == alive
    # The vmtable's averages are the readings' own.
    first = int(np.argmin(created))
    vm = list(workload.vmid).index(f"vm{first:05d}")
    assert workload.avgcpu[vm] == pytest.approx(
        series[first, created[first] // pw.SLOT:].mean(), abs=0.01)
    memory_mb = spec.node(0).memory_mb
    share = memory.sum() * 1024 / (spec.hosts * (memory_mb - 4096))
    assert share == pytest.approx(pw.MEMORY_SHARE, abs=0.02)


def test_summary_against_the_baseline_and_the_oracle():
    sys.path.insert(0, TOOLS)
    try:
        draws_tool = _tool("bench_quality_draws")
    finally:
        sys.path.remove(TOOLS)

    def run(name, hot):
        return {"config": name, "hot_host_minutes": hot, "rejected": 0,
                "migrations": 0, "wall_seconds": 1.0}

    summary = draws_tool.summarise([
        [run("nova", 100), run("x", 50), run("oracle", 0)],
        [run("nova", 300), run("x", 330), run("oracle", 100)]])
    x = summary["x"]
    assert x["vs_baseline_percent"] == [-50.0, 10.0]
    assert x["pooled_percent"] == -5.0
    assert x["range_percent"] == [-50.0, 10.0]
    assert x["draws_won"] == 1
    assert x["oracle_share_percent"] == [50.0, -15.0]
    assert math.isclose(x["pooled_oracle_share_percent"], 20 / 300 * 100)


def test_with_names_each_vm_is_one_machine_throughout(pw, tmp_path):
    days = ["d1", "d2", "d3"]
    # Machine "a" on all three days, "b" on two, "c" on one: each row's
    # readings are its machine's letter code, so a VM's days show which
    # machine they came from.
    machines = {"d1": ["a", "b", "c"], "d2": ["a", "b"], "d3": ["a"]}
    code = {"a": 1.0, "b": 2.0, "c": 3.0}
    rows = {day: np.array([[code[name]] * pw.SLOTS_PER_DAY
                           for name in machines[day]]) for day in days}
    for day, names in machines.items():
        for name in reversed(names):
            (tmp_path / day).mkdir(exist_ok=True)
            (tmp_path / day / name).write_text("0\n")
    names = pw.read_names(str(tmp_path), days)
    assert names == machines
    series = pw.draw_machines(days, rows, names, 0, 0, 2, 2)
    # Two machines recorded on two days or more: each VM keeps its own.
    assert sorted(set(row) for row in series.tolist()) == [{1.0}, {2.0}]
    with pytest.raises(ValueError, match="1 machines are recorded on 3"):
        pw.draw_machines(days, rows, names, 0, 0, 2, 3)
