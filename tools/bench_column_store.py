#!/usr/bin/env python3
"""What a report's read would cost the host cache if a refresh read its
changed rows into columns shared by all hosts: a sketch of issue 29's
next step, measured beside the host cache's read of the same reports.

``bench_reports.py``'s setup (``--hosts`` simulated nodes reporting in
12 phases per 60 s on the simulator's scratch SQLite file); after each
phase, in one process and on the same rows:

- ``cache_read_us``: the host cache's refresh (``HostManager``), as
  ``bench_reports``'s ``read_us``;
- ``sketch_read_us``: the same scan (``host_queries.scan_after``, on a
  connection of its own), then every row's report parsed and written,
  all rows at once, into columns of every host (``ColumnSketch``): the
  newest values as a matrix of hosts by metrics, and the history as a
  ring of reports per host with running sums, its window kept;
- ``sketch_fetch_us``: the scan's part of it;
- ``fresh_fetch_us`` and ``parse_us``: sqlite3 alone fetching the same
  rows once on a connection of its own, and msgspec parsing their
  reports, after both (``bench_reports``' fresh floor), and each read
  over that floor.

Each node reports values of its own (its number in them), so that a
report read into another node's row shows; ``check()`` compares the
sketch's newest values, change keys and hour's mean with the cache's
after the run. The default 960 phases are 80 simulated minutes: both
sides hold a full hour of history and trim it at every report.

The sketch leaves out what a store would still need and what the
numbers therefore do not hold: a report whose metrics differ from the
fleet's (their own columns: ``skipped`` counts them), each metric's own
time, the malformed reports, the instance entries, the claims (a report
leaves them as they are), the versions (a refresh's changed columns
copied, or taken over when no decision reads them, so that a decision
reads one version), the running sums' rebasing, and the ``HostState``
that the Nova-style plugins take, which would be built from the columns
only for them, when they ask.
"""

import argparse
import datetime
import math
import os
import sqlite3
import sys
import time

import msgspec
import numpy as np

try:
    # tools/ is sys.path[0] when this file runs as a script.
    import bench_reports
except ImportError:  # python -m tools.bench_column_store
    from tools import bench_reports

from scheduler.common import gc_tuning
from scheduler.db import host_queries
from scheduler.db.host_queries import NodeRow
from scheduler.hosts.cache import report_columns
from scheduler.hosts.cache.manager import HostManager
from scheduler.hosts.table import epoch
from scheduler.simulation import runs as simulation_runs

_read_entries = report_columns.read_entries
_UNSET = msgspec.UNSET
#: Reports a host's ring holds (an hour at a minute, and room).
RING = 64
WINDOW = 3600.0


class ColumnSketch:
    """Every host's newest report and report history as columns."""

    def __init__(self, node_ids: list[int]):
        self.row_of = {node: row for row, node in enumerate(node_ids)}
        hosts = len(node_ids)
        self.names: tuple[str, ...] | None = None
        self.generation = np.zeros(hosts, np.int64)
        self.changed_at = np.zeros(hosts)
        self.updated_at = np.zeros(hosts)
        #: Reports of other metrics than the fleet's, left out.
        self.skipped = 0
        self._times: dict[str, float] = {}

    def _laid_out(self, names: tuple[str, ...]) -> None:
        """The metric columns, once the fleet's metrics are known."""
        hosts, metrics = len(self.row_of), len(names)
        self.names = names
        self.values = np.full((hosts, metrics), np.nan)
        # Per host and report: value, running sum, running sum of squares.
        self.ring = np.zeros((hosts, RING, metrics, 3))
        self.ring_times = np.zeros((hosts, RING))
        self.newest = np.full(hosts, -1, np.int64)
        self.oldest = np.zeros(hosts, np.int64)

    def read(self, rows: list) -> None:
        """The reports of ``rows`` into the columns, all at once."""
        at, values, times, read = [], [], [], []
        times_of, row_of = self._times, self.row_of
        for row in rows:
            host = [entry for entry in _read_entries(row.metrics)
                    if entry.instance is _UNSET]
            names = tuple(entry.name for entry in host)
            if names != self.names:
                if self.names is not None:
                    self.skipped += 1  # columns of its own: not sketched
                    continue
                self._laid_out(names)
            values.extend([entry.value for entry in host])
            text = host[0].timestamp
            when = times_of.get(text)
            if when is None:
                when = times_of[text] = epoch(
                    datetime.datetime.fromisoformat(text.rstrip("Z")))
            times.append(when)
            at.append(row_of[row.id])
            read.append(row)
        if not at:
            return
        self._write(np.array(at), np.array(values).reshape(len(at), -1),
                    np.array(times), read)

    def _write(self, at: np.ndarray, values: np.ndarray, times: np.ndarray,
               rows: list) -> None:
        self.values[at] = values
        newest = self.newest[at]
        fresh = (newest < 0)[:, None]
        sums = np.where(fresh, 0.0, self.ring[at, newest % RING, :, 1])
        squares = np.where(fresh, 0.0, self.ring[at, newest % RING, :, 2])
        slot = (newest + 1) % RING
        self.ring[at, slot, :, 0] = values
        self.ring[at, slot, :, 1] = sums + values
        self.ring[at, slot, :, 2] = squares + values * values
        self.ring_times[at, slot] = times
        self.newest[at] = newest + 1
        # The window: each host's oldest kept report moves past it, and
        # past the ring's end (reports more often than RING an hour).
        oldest = np.maximum(self.oldest[at], newest + 2 - RING)
        cutoff = times - WINDOW
        while True:
            out = ((self.ring_times[at, oldest % RING] <= cutoff)
                   & (oldest <= newest))
            if not out.any():
                break
            oldest = oldest + out
        self.oldest[at] = oldest
        self.generation[at] = [row.generation for row in rows]
        self.changed_at[at] = [epoch(row.changed_at) for row in rows]
        self.updated_at[at] = [epoch(row.updated_at) for row in rows]


def check(sketch: ColumnSketch, cache: HostManager) -> None:
    """The sketch holds every host's newest values, change key and
    hour's mean as the cache does."""
    for host in cache.host_states():
        row = sketch.row_of[host.node_id]
        held = [host.metrics[name].value for name in sketch.names]
        assert sketch.values[row].tolist() == held, (host.host, held)
        newest, oldest = sketch.newest[row], sketch.oldest[row]
        ring = sketch.ring[row]
        assert ring[newest % RING, :, 0].tolist() == held
        assert sketch.generation[row] == host.generation
        assert sketch.changed_at[row] == epoch(host.changed_at)
        kept = newest - oldest + 1
        before = (ring[oldest % RING, :, 1] - ring[oldest % RING, :, 0])
        means = (ring[newest % RING, :, 1] - before) / kept
        for name, mean in zip(sketch.names, means.tolist(), strict=True):
            assert math.isclose(mean, host.metric_history.statistic(
                name, "mean", WINDOW), rel_tol=1e-9), (host.host, name)


def _phases(fleet, cache, sketch, engine, driver, sim_clock, hosts,
            rounds):
    """(cache read, sketch read, sketch fetch, fresh fetch, parse) CPU µs
    per report."""
    spent = np.zeros(5)
    reports = 0
    metrics = NodeRow._fields.index("metrics")
    # The nodes' first reports, as the cache's first load read them.
    with engine.connect() as connection:
        rows = host_queries.scan_after(connection,
                                       datetime.datetime(1970, 1, 1)).rows
    sketch.read(rows)
    watermark = max(row.changed_at for row in rows)
    for measured, chosen, newest, _ in bench_reports.written_phases(
            fleet, sim_clock, driver, hosts, 3, rounds, own_values=True):
        began = time.process_time()
        cache.host_states()
        cached = time.process_time()
        with engine.connect() as connection:
            rows = host_queries.scan_after(connection, watermark).rows
            fetched = time.process_time()
            sketch.read(rows)
        done = time.process_time()
        assert len(rows) == len(chosen), "the phase's rows"
        watermark = max(row.changed_at for row in rows)
        fetch, found = bench_reports.fresh_fetch(driver, newest,
                                                 len(chosen))
        parse_began = time.process_time()
        for row in found:
            msgspec.json.decode(row[metrics])
        parse = time.process_time() - parse_began
        if measured:
            spent += (cached - began, done - cached, fetched - cached,
                      fetch, parse)
            reports += len(chosen)
    return 1e6 * spent / reports


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=960,
                        help="report phases measured (12 per minute)")
    args = parser.parse_args()
    if args.hosts < bench_reports.PHASES:
        parser.error(f"--hosts must be at least {bench_reports.PHASES}: "
                     "one node a phase")
    with simulation_runs.scratch_directory() as directory:
        path = os.path.join(directory, "reports.sqlite")
        with bench_reports.scratch_fleet(path, args.hosts) as (
                engine, fleet, cache, now):
            nodes = sorted(host.node_id for host in cache.host_states())
            sketch = ColumnSketch(nodes)
            gc_tuning.tune()
            print(f"{args.rounds} phases of "
                  f"{args.hosts // bench_reports.PHASES} reports",
                  file=sys.stderr)
            driver = sqlite3.connect(path, isolation_level=None)
            cache_read, sketch_read, sketch_fetch, fresh, parse = _phases(
                fleet, cache, sketch, engine, driver, now, args.hosts,
                args.rounds)
            driver.close()
            check(sketch, cache)
    floor = fresh + parse
    print(f"column_store hosts={args.hosts} cache_read_us={cache_read:.1f} "
          f"sketch_read_us={sketch_read:.1f} "
          f"sketch_fetch_us={sketch_fetch:.1f} fresh_fetch_us={fresh:.1f} "
          f"parse_us={parse:.1f} skipped={sketch.skipped}")
    print(f"ratios cache_over_sketch={cache_read / sketch_read:.1f} "
          f"cache_over_fresh_floor={cache_read / floor:.1f} "
          f"sketch_over_fresh_floor={sketch_read / floor:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
