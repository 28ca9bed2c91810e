#!/usr/bin/env python3
"""Decision latency of SchedulerManager.explain with and without the live
scheduling-policy check (the policy generation read with each host
refresh), in the same run, on the same fleet.

The fleet and the request are tools/bench_engine.py's; between two
decisions one node's row changes, as a monitor report would, so every
decision pays for an incremental refresh. Decisions alternate between the
check on and off in blocks of ten, so that both see the same machine
load. Prints one machine-readable line per fleet size and mode, e.g.
``hosts=1000 live_check=on p50_ms=1.20 p99_ms=2.40 per_s=830``.
"""

import argparse
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_engine

from scheduler import manager as manager_mod
from scheduler.db import api as db_api
from scheduler.db import schema

BLOCK = 10


def bench(size: int, decisions: int, url: str | None) -> dict[str, list]:
    rng = random.Random(size)
    samples: dict[str, list[float]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as tmp:
        conf = bench_engine.make_conf(url or f"sqlite:///{tmp}/b.sqlite")
        engine = db_api.get_engine(conf)
        schema.db_sync(engine)
        bench_engine.build_fleet(engine, size, rng)
        manager = manager_mod.SchedulerManager(conf)
        probes = list(manager.host_manager.refresh_probes)
        manager.explain(bench_engine.REQUEST)
        for i in range(2 * decisions):
            mode = "on" if (i // BLOCK) % 2 == 0 else "off"
            manager.host_manager.refresh_probes[:] = (
                probes if mode == "on" else [])
            bench_engine.touch_one(engine, size, rng)
            began = time.perf_counter()
            manager.explain(bench_engine.REQUEST)
            samples[mode].append((time.perf_counter() - began) * 1000)
        db_api.dispose_engines()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, action="append")
    parser.add_argument("--decisions", type=int, default=300,
                        help="decisions per mode")
    parser.add_argument("--db-url", default=os.environ.get("BENCH_DB_URL"),
                        help="an empty database (default: a SQLite file)")
    args = parser.parse_args()
    for size in args.hosts or [100, 1000]:
        for mode, values in bench(size, args.decisions,
                                  args.db_url).items():
            values.sort()
            print(f"hosts={size} live_check={mode} "
                  f"p50_ms={statistics.median(values):.2f} "
                  f"p99_ms={values[int(len(values) * 0.99)]:.2f} "
                  f"per_s={1000 / statistics.mean(values):.0f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
