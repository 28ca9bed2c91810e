#!/usr/bin/env python3
"""What one metrics report costs: the node's write and the host cache's
read of it, beside the floor the database driver and the JSON parser set.

A simulated day of N nodes is N x 1,440 reports at the default interval;
a scheduler process reads every one of them again before its next
decision. This tool measures that per-report cost alone, on the
simulator's scratch SQLite file: ``--hosts`` simulated nodes with
``--instances`` instance entries each report in 12 phases per 60 s, as
in ``scheduler-manage simulate``, and after each phase the host cache
refreshes (``HostManager.host_states``). CPU time of the process, per
report:

- ``write_us``: the phase's report writes (``SimulatedFleet.report``);
- ``read_us``: the refresh that reads them (fetch, decode, host states,
  host table), whose fixed part ``empty_refresh_us`` (a refresh that finds
  nothing changed) is spread over the phase's rows;
- ``fresh_fetch_us``: after that refresh, sqlite3 alone fetching the
  same rows once, on a connection of its own, as the refresh found them:
  just written by another connection, so read again (mostly from the
  write-ahead log, through the system's file cache) rather than from the
  connection's own page cache; after the refresh, so that the floor is
  if anything the cheaper.

Then the floor, the same work done hot by the driver and parser alone on
the same rows, without the engine around them:

- ``driver_write_us``: sqlite3's executemany of the same UPDATE;
- ``driver_fetch_us``: sqlite3 fetching the changed rows' columns;
- ``parse_us``: msgspec parsing a report's metrics text (into plain
  lists and dicts);
- ``check_us``: the host cache's check of a well-formed report, the
  parse included, as a refresh reads its rows' reports at once
  (``report_columns.refresh_columns``).

``read_over_floor`` is ``read_us / (driver_fetch_us + parse_us)``;
``read_over_fresh_floor`` the same with ``fresh_fetch_us``, the fetch the
driver cannot do faster on rows it has not read before (the hot floor
reads the same rows 200 times from its page cache).

The day's arithmetic: 1,440 x hosts x (write_us + read_us) for the
reports; the decisions' own cost is what ``bench_quality``'s
``wall_s_arrivals`` and ``wall_s_balancing`` leave once the reads
(1,440 x hosts x read_us) are taken out of them.
"""

import argparse
import contextlib
import datetime
import os
import sqlite3
import sys
import time
from collections.abc import Iterator

import msgspec
import numpy as np
import sqlalchemy as sa

try:
    # tools/ is sys.path[0] when this file runs as a script.
    import bench_claims_load
except ImportError:  # python -m tools.bench_reports
    from tools import bench_claims_load

from scheduler.common import clock
from scheduler.common import gc_tuning
from scheduler.db import api as db_api
from scheduler.db import schema
from scheduler.db.host_queries import NodeRow
from scheduler.hosts.cache import report_columns
from scheduler.hosts.cache.manager import HostManager
from scheduler.simulation import fleet as fleet_mod
from scheduler.simulation import runner
from scheduler.simulation import runs as simulation_runs

PHASES = fleet_mod.MAX_PHASES
REPORT_INTERVAL = runner.Settings.report_interval
#: Simulated seconds between a phase's writes and the refresh reading
#: them, so that the rows are stamped before the cache's watermark moves.
AFTER_WRITES = 1e-6


def written_phases(fleet: fleet_mod.SimulatedFleet,
                   sim_clock: clock.SimulatedClock,
                   driver: sqlite3.Connection, hosts: int, instances: int,
                   rounds: int, own_values: bool = False
                   ) -> Iterator[tuple[bool, np.ndarray, str, float]]:
    """Each of ``PHASES + rounds`` report phases, its nodes' reports
    written (``instances`` instance entries each; ``own_values``: each
    node's cpu.percent off the others' by its number over ``hosts``) and
    the clock moved just past them: (measured, the phase's nodes, the
    newest change stamp before its writes as stored, CPU seconds of the
    writes). The first round is not measured: it fills the templates."""
    phase_hosts = fleet_mod.report_phases(hosts)
    entries = {host: [(fleet_mod.instance_uuid(host * 1000 + i), 12.5)
                      for i in range(instances)] for host in range(hosts)}
    step = REPORT_INTERVAL / PHASES
    for number in range(PHASES + rounds):
        newest = driver.execute(
            "SELECT max(changed_at) FROM compute_nodes").fetchone()[0]
        chosen = phase_hosts[number % PHASES]
        now = (number + 1) * step
        sim_clock.advance_to(now)
        # The utilisation slot moves every 5 minutes: four of five
        # reports of a node repeat its values with a new time, as in a
        # simulation.
        slot = int(now // 300)
        cpu = np.full(len(chosen), 20.0 + slot % 7)
        if own_values:
            cpu += chosen / hosts
        began = time.process_time()
        fleet.report(chosen, cpu, np.full(len(chosen), 8192),
                     [(slot, 0)] * len(chosen), entries.__getitem__)
        wrote = time.process_time() - began
        sim_clock.advance_to(now + AFTER_WRITES)
        yield number >= PHASES, chosen, newest, wrote


def fresh_fetch(driver: sqlite3.Connection, newest: str,
                count: int) -> tuple[float, list[tuple]]:
    """CPU seconds of sqlite3 fetching the rows changed after ``newest``
    (``count`` of them: checked), and the rows."""
    began = time.process_time()
    rows = driver.execute(SELECT_CHANGED, (newest,)).fetchall()
    spent = time.process_time() - began
    assert len(rows) == count, "the phase's rows, as written"
    return spent, rows


def _per_report(fleet: fleet_mod.SimulatedFleet, cache: HostManager,
                sim_clock: clock.SimulatedClock, hosts: int,
                instances: int, rounds: int, path: str
                ) -> tuple[float, float, float, float]:
    """(write, read, empty refresh, fresh fetch) CPU microseconds per
    report."""
    wrote = read = fetched = 0.0
    rows = 0
    driver = sqlite3.connect(path, isolation_level=None)
    for measured, chosen, newest, writes in written_phases(
            fleet, sim_clock, driver, hosts, instances, rounds):
        began = time.process_time()
        cache.host_states()
        done = time.process_time()
        fetch, _ = fresh_fetch(driver, newest, len(chosen))
        if measured:
            wrote += writes
            read += done - began
            fetched += fetch
            rows += len(chosen)
    empty = 0.0
    for _ in range(200):
        sim_clock.advance_to(sim_clock.seconds + AFTER_WRITES)
        began = time.process_time()
        cache.host_states()
        empty += time.process_time() - began
    driver.close()
    return (1e6 * wrote / rows, 1e6 * read / rows, 1e6 * empty / 200,
            1e6 * fetched / rows)


@contextlib.contextmanager
def scratch_fleet(path: str, hosts: int) -> Iterator[tuple[
        sa.Engine, fleet_mod.SimulatedFleet, HostManager,
        clock.SimulatedClock]]:
    """``hosts`` simulated nodes in a SQLite file at ``path``, as the
    simulator keeps its scratch database, and a host cache that loaded
    them, on a simulated clock at the simulation's start; the engine is
    disposed of on leaving."""
    conf = bench_claims_load.make_conf(f"sqlite:///{path}")
    conf.set_override("sqlite_synchronous", False, group="database")
    engine = db_api.get_engine(conf)
    schema.db_sync(engine)
    try:
        with clock.simulated(clock.SimulatedClock(runner.START)) as now:
            fleet = fleet_mod.SimulatedFleet(
                engine, fleet_mod.FleetSpec(hosts, 32, 131072))
            fleet.create()
            cache = HostManager(conf)
            cache.host_states()
            yield engine, fleet, cache, now
    finally:
        engine.dispose()


#: The changed rows' columns, as the host cache's scan reads them.
SELECT_CHANGED = (f"SELECT {', '.join(NodeRow._fields)} FROM compute_nodes "
                 "WHERE changed_at > ?")


def _floor(path: str, repeat: int = 200) -> dict[str, float]:
    """The driver's and parser's own microseconds per row, hot."""
    database = sqlite3.connect(path, isolation_level=None)
    database.execute("PRAGMA synchronous=OFF")
    newest = database.execute("SELECT max(changed_at) FROM compute_nodes"
                              ).fetchone()[0]
    after = database.execute(
        "SELECT max(changed_at) FROM compute_nodes WHERE changed_at < ?",
        (newest,)).fetchone()[0]
    rows = database.execute(SELECT_CHANGED, (after,)).fetchall()
    began = time.process_time()
    for _ in range(repeat):
        database.execute(SELECT_CHANGED, (after,)).fetchall()
    fetch = time.process_time() - began
    texts = [row[NodeRow._fields.index("metrics")] for row in rows]
    began = time.process_time()
    for _ in range(repeat):
        for text in texts:
            msgspec.json.decode(text)
    parse = time.process_time() - began
    began = time.process_time()
    for _ in range(repeat):
        report_columns.refresh_columns(texts)
    check = time.process_time() - began
    update = ("UPDATE compute_nodes SET metrics = ?, metrics_updated_at = ?, "
              "updated_at = ?, changed_at = ?, memory_mb_used = ?, "
              "generation = generation + 1 WHERE id = ?")
    ids = [row[0] for row in rows]
    stamp = datetime.datetime(2030, 1, 1)
    began = time.process_time()
    for number in range(repeat):
        at = (stamp + datetime.timedelta(seconds=number)).isoformat(
            " ", "microseconds")
        database.execute("BEGIN")
        database.executemany(update, [
            (text, at, at, at, 8192, node)
            for text, node in zip(texts, ids, strict=True)])
        database.execute("COMMIT")
    write = time.process_time() - began
    database.close()
    per_row = 1e6 / (repeat * len(rows))
    return {"driver_write_us": write * per_row,
            "driver_fetch_us": fetch * per_row,
            "parse_us": parse * per_row, "check_us": check * per_row}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--instances", type=int, default=3,
                        help="instance entries per report")
    parser.add_argument("--rounds", type=int, default=480,
                        help="report phases measured (12 per minute)")
    args = parser.parse_args()
    if args.hosts < PHASES:
        parser.error(f"--hosts must be at least {PHASES}: one node a phase")
    with simulation_runs.scratch_directory() as directory:
        path = os.path.join(directory, "reports.sqlite")
        with scratch_fleet(path, args.hosts) as (engine, fleet, cache, now):
            gc_tuning.tune()
            print(f"{args.rounds} phases of {args.hosts // PHASES} reports",
                  file=sys.stderr)
            write, read, empty, fresh = _per_report(
                fleet, cache, now, args.hosts, args.instances, args.rounds,
                path)
        floor = _floor(path)
    print(f"report hosts={args.hosts} instances={args.instances} "
          f"write_us={write:.1f} read_us={read:.1f} "
          f"empty_refresh_us={empty:.0f} fresh_fetch_us={fresh:.1f}")
    print("floor " + " ".join(f"{name}={value:.1f}"
                              for name, value in floor.items()))
    parse = floor["parse_us"]
    print(f"ratios read_over_floor="
          f"{read / (floor['driver_fetch_us'] + parse):.1f} "
          f"read_over_fresh_floor={read / (fresh + parse):.1f}")
    day = 1440 * args.hosts * (write + read) / 1e6
    print(f"reports_per_day={1440 * args.hosts} "
          f"report_s_per_sim_day={day:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
