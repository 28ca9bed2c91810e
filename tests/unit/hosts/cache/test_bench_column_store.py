"""tools/bench_column_store.py: the sketch of a host cache of columns
holds what the host cache holds, beside which it is measured."""

import datetime
import importlib.util
import json
import os
import sys

import pytest

from scheduler.db.host_queries import NodeRow

TOOLS = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                     os.pardir, os.pardir, "tools")
T0 = datetime.datetime(2030, 1, 1)


@pytest.fixture
def tool(monkeypatch):
    monkeypatch.syspath_prepend(TOOLS)
    spec = importlib.util.spec_from_file_location(
        "bench_column_store", os.path.join(TOOLS, "bench_column_store.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(node: int, at: datetime.datetime, cpu: float) -> NodeRow:
    stamp = at.isoformat() + "Z"
    metrics = json.dumps([
        {"name": "cpu.percent", "value": cpu, "source": "s",
         "timestamp": stamp},
        {"name": "memory.used", "value": 2 * cpu, "source": "s",
         "timestamp": stamp}])
    return NodeRow(node, f"u{node}", f"h{node}", f"h{node}", None, None, 8,
                   8192, 100, None, None, None, "{}", "[]", metrics, at,
                   False, None, 1, at, at)


def test_the_sketch_reads_every_report_as_the_cache_does(
        tool, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [
        "bench_column_store.py", "--hosts", "24", "--rounds", "24"])
    # The collector as the other tests of this process have it.
    monkeypatch.setattr(tool.gc_tuning, "tune", lambda: None)
    # main() checks the sketch's columns against the cache's hosts.
    assert tool.main() == 0
    line = capsys.readouterr().out.strip()
    fields = dict(field.split("=") for field in line.split()[1:])
    assert fields["hosts"] == "24"
    assert float(fields["sketch_read_us"]) > float(
        fields["sketch_fetch_us"]) > 0


def test_a_hosts_ring_keeps_an_hour_and_its_running_sums(tool):
    sketch = tool.ColumnSketch([7, 9])
    minutes = [0, 30, 59, 61, 125]
    for minute in minutes:
        sketch.read([_row(9, T0 + datetime.timedelta(minutes=minute),
                          float(minute))])
    row = sketch.row_of[9]
    assert sketch.values[row].tolist() == [125.0, 250.0]
    # Kept: the reports within an hour of the newest (minute 125).
    assert sketch.newest[row] - sketch.oldest[row] + 1 == 1
    assert sketch.ring[row, sketch.newest[row] % tool.RING, 0, 1] == sum(
        minutes)
    assert sketch.newest[sketch.row_of[7]] == -1
