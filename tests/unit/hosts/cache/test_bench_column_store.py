"""tools/bench_column_store.py: the sketch of a host cache of columns
holds what the host cache holds, beside which it is measured."""

import datetime
import json
import sys

import pytest

from scheduler.db.host_queries import NodeRow
from tests.fakes import load_tool

T0 = datetime.datetime(2030, 1, 1)


@pytest.fixture
def tool(monkeypatch):
    return load_tool(monkeypatch, "bench_column_store")


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
    fields = dict(field.split("=") for line in capsys.readouterr().out
                  .splitlines() for field in line.split()[1:])
    assert fields["hosts"] == "24" and fields["skipped"] == "0"
    assert float(fields["sketch_read_us"]) > float(
        fields["sketch_fetch_us"]) > 0
    assert float(fields["sketch_over_fresh_floor"]) > 0


def test_a_report_read_into_another_hosts_row_fails_the_check(
        tool, monkeypatch):
    monkeypatch.setattr(sys, "argv", [
        "bench_column_store.py", "--hosts", "24", "--rounds", "12"])
    monkeypatch.setattr(tool.gc_tuning, "tune", lambda: None)
    write = tool.ColumnSketch._write

    def shifted(self, at, *rest):
        write(self, (at + 1) % len(self.row_of), *rest)
    monkeypatch.setattr(tool.ColumnSketch, "_write", shifted)
    with pytest.raises(AssertionError):
        tool.main()


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


def test_a_ring_full_before_the_hour_keeps_its_newest_reports(tool):
    sketch = tool.ColumnSketch([3])
    for half_minute in range(70):  # 35 minutes: all within the window
        sketch.read([_row(3, T0 + datetime.timedelta(seconds=30 * half_minute),
                          float(half_minute))])
    newest, oldest = sketch.newest[0], sketch.oldest[0]
    assert newest == 69 and newest - oldest + 1 == tool.RING
    assert sketch.ring[0, oldest % tool.RING, 0, 0] == float(oldest)
    assert sketch.ring_times[0, oldest % tool.RING] == tool.epoch(
        T0 + datetime.timedelta(seconds=30 * int(oldest)))


def test_reports_of_other_metrics_are_counted_not_read(tool):
    sketch = tool.ColumnSketch([1, 2])
    sketch.read([_row(1, T0, 5.0)])
    other = _row(2, T0, 6.0)._replace(metrics=json.dumps([
        {"name": "load", "value": 1, "source": "s",
         "timestamp": T0.isoformat() + "Z"}]))
    sketch.read([other])
    assert sketch.skipped == 1 and sketch.newest.tolist() == [0, -1]
