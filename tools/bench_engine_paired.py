#!/usr/bin/env python3
"""bench_engine's decision, two configurations taken in turn on one fleet.

``bench_engine.py --config-file`` runs each configuration after the
other, each in a process of its own: right for the memory it adds, but on
a shared machine the load that one run meets is not the load the next
one meets, and the p50 ratio of the two moves with it (1.0 to 1.9 for
the same code, measured 2026-11-28). Here one process holds two
schedulers on the same database, the bench's configuration and
``--config-file``'s; every node report (``touch_one``) is followed by a
decision of each, the first of the two alternating, so that each pair
of decisions meets the same machine. Printed: each configuration's
p50 and p99 (wall) and CPU p50 (the deciding thread's), their ratios,
and the median of the per-pair ratios.

    python tools/bench_engine_paired.py --hosts 1000 \\
        --instances-per-host 20 --warm-reports 360 \\
        --config-file examples/simulate/load-aware.conf
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

try:
    # tools/ is sys.path[0] when this file runs as a script.
    import bench_engine
except ImportError:  # python -m tools.bench_engine_paired
    from tools import bench_engine

from scheduler.db import api as db_api
from scheduler.db import schema
from scheduler.engine import filter_scheduler
from scheduler.request.spec import RequestSpec


def _decide(scheduler: filter_scheduler.FilterScheduler) -> tuple[float,
                                                                   float]:
    """One decision's wall and thread CPU time, in ms."""
    started, cpu_started = time.perf_counter(), time.thread_time()
    scheduler.select(RequestSpec.from_dict(bench_engine.REQUEST))
    return ((time.perf_counter() - started) * 1000,
            (time.thread_time() - cpu_started) * 1000)


def paired(size: int, decisions: int, config_file: str, *,
           per_host: int = 0, warm_reports: int = 0) -> dict:
    """The two configurations' decisions, taken in turn (see above)."""
    rng = random.Random(size)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.sqlite"
        confs = [bench_engine.make_conf(url),
                 bench_engine.make_conf(url, [config_file])]
        engine = db_api.get_engine(confs[0])
        schema.db_sync(engine)
        instances = bench_engine.build_fleet(engine, size, rng, per_host)
        schedulers = [filter_scheduler.FilterScheduler(conf)
                      for conf in confs]
        try:
            return _timed(engine, size, rng, instances, schedulers,
                          decisions, warm_reports) | {
                "hosts": size, "config": os.path.basename(config_file)}
        finally:
            for scheduler in schedulers:
                scheduler.host_manager.close()
            db_api.dispose_engines()


def _timed(engine: object, size: int, rng: random.Random,
           instances: dict, schedulers: list, decisions: int,
           warm_reports: int) -> dict:
    """Warm both schedulers' caches, then time their decisions in turn."""
    for scheduler in schedulers:
        # Full loads in a background refresher, as in bench_engine.
        scheduler.host_manager.start_background_refresh()
        scheduler.select(RequestSpec.from_dict(bench_engine.REQUEST))
    for done in range(warm_reports):
        bench_engine.report_all(engine, instances, rng)
        for scheduler in schedulers:
            scheduler.select(RequestSpec.from_dict(bench_engine.REQUEST))
        if done % 60 == 59:
            print(f"warm reports: {done + 1}/{warm_reports}",
                  file=sys.stderr, flush=True)
    loads = [bench_engine.background_loads(s.host_manager)
             for s in schedulers]
    wall: tuple[list, list] = ([], [])
    cpu: tuple[list, list] = ([], [])
    for index in range(decisions):
        bench_engine.touch_one(engine, size, rng, instances)
        for which in ((0, 1) if index % 2 == 0 else (1, 0)):
            took, took_cpu = _decide(schedulers[which])
            wall[which].append(took)
            cpu[which].append(took_cpu)
    reloads = [bench_engine.background_loads(s.host_manager) - before
               for s, before in zip(schedulers, loads, strict=True)]
    return _summary(wall, cpu) | {"default_reloads": reloads[0],
                                  "config_reloads": reloads[1]}


def _summary(wall: tuple[list, list], cpu: tuple[list, list]) -> dict:
    def p99(samples: list) -> float:
        ordered = sorted(samples)
        return ordered[min(len(ordered) - 1, int(len(ordered) * .99))]
    base, other = (statistics.median(samples) for samples in wall)
    base_cpu, other_cpu = (statistics.median(samples) for samples in cpu)
    return {
        "decisions": len(wall[0]),
        "default_p50_ms": base, "config_p50_ms": other,
        "default_p99_ms": p99(wall[0]), "config_p99_ms": p99(wall[1]),
        "default_cpu_p50_ms": base_cpu, "config_cpu_p50_ms": other_cpu,
        "p50_ratio": other / base, "cpu_p50_ratio": other_cpu / base_cpu,
        "pair_ratio_median": statistics.median(
            b / a for a, b in zip(*wall, strict=True) if a > 0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--hosts", type=int, default=1000, help="fleet size (default 1000)")
    add("--decisions", type=int, default=2000,
        help="decisions of each configuration (default 2000)")
    add("--config-file", required=True,
        help="the configuration compared with the bench's own")
    add("--instances-per-host", type=int, default=0,
        help="claimed instances per node reporting instance.cpu.percent")
    add("--warm-reports", type=int, default=0,
        help="reports per node before the timed decisions")
    args = parser.parse_args(argv)
    result = paired(args.hosts, args.decisions, args.config_file,
                    per_host=args.instances_per_host,
                    warm_reports=args.warm_reports)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
