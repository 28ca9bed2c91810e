#!/usr/bin/env python3
"""The host cache's own memory per host, by the line that allocated it.

``bench_engine.py``'s ``bytes_per_host`` is the resident memory a cold
start adds: the cache, but also the database driver's page cache and
the allocator's slack, which differ from run to run. This tool counts
only what Python allocated (``tracemalloc``) for a scheduler's first
decision over ``bench_engine``'s fleet, on a fresh scheduler after a
first one imported and warmed everything, and prints the total per host
(``traced_bytes_per_host``, ``peak_bytes_per_host`` while loading) and
the ``--top`` lines that hold most of it. The same numbers, within a
few bytes, on every run of the same code, so a change's effect on the
cache's memory shows alone.
"""

import argparse
import gc
import random
import sys
import tempfile
import tracemalloc

try:
    # tools/ is sys.path[0] when this file runs as a script.
    import bench_engine
except ImportError:  # python -m tools.bench_cache_memory
    from tools import bench_engine

from scheduler.db import api as db_api
from scheduler.db import schema
from scheduler.engine import filter_scheduler
from scheduler.request.spec import RequestSpec


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--instances-per-host", type=int, default=0)
    parser.add_argument("--top", type=int, default=10,
                        help="allocating lines listed")
    args = parser.parse_args()
    rng = random.Random(args.hosts)
    with tempfile.TemporaryDirectory() as tmp:
        conf = bench_engine.make_conf(f"sqlite:///{tmp}/bench.sqlite", [])
        engine = db_api.get_engine(conf)
        schema.db_sync(engine)
        bench_engine.build_fleet(engine, args.hosts, rng,
                                 args.instances_per_host)
        # Imports, plugins and compiled statements, outside the count.
        filter_scheduler.FilterScheduler(conf).select(
            RequestSpec.from_dict(bench_engine.REQUEST))
        gc.collect()
        tracemalloc.start()
        scheduler = filter_scheduler.FilterScheduler(conf)
        scheduler.select(RequestSpec.from_dict(bench_engine.REQUEST))
        gc.collect()
        peak = tracemalloc.get_traced_memory()[1]
        stats = tracemalloc.take_snapshot().statistics("lineno")
        tracemalloc.stop()
        db_api.dispose_engines()
    per_host = 1 / args.hosts
    total = sum(stat.size for stat in stats)
    print(f"hosts={args.hosts} instances={args.instances_per_host} "
          f"traced_bytes_per_host={total * per_host:.0f} "
          f"peak_bytes_per_host={peak * per_host:.0f}")
    for stat in stats[:args.top]:
        frame = stat.traceback[0]
        print(f"{stat.size * per_host:8.0f} B {stat.count * per_host:5.1f} "
              f"objects  {frame.filename}:{frame.lineno}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
