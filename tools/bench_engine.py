#!/usr/bin/env python3
"""Benchmark of one scheduling decision, host-cache refresh included.

Builds a synthetic fleet (N nodes, ~20 metrics each) in a database, then
times ``FilterScheduler.select`` for a request that exercises the default
filters plus ComputeCapabilities, Metrics and ResourcesThreshold, weighed
by RAM, CPU, Metrics and Resources weighers. Between two decisions one
node's row changes, as a monitor report would, so every decision pays for
an incremental refresh. ``[filter_scheduler] full_refresh_interval`` is
short (``--full-refresh-interval``) and the measured window lasts at least
two of them, so that periodic full loads happen while decisions are timed:
on the request path (``--no-background``, or a scheduler that has no
background refresher) or in the background refresher, as a serving
process runs it.

Prints one machine-readable line per fleet size, e.g.
``hosts=1000 p50_ms=1.20 p99_ms=2.40 per_s=830 ...``, with the cold start
(the first load and decision: ``cold_s``, and the resident memory they
added per host, ``bytes_per_host``) and the full loads that happened while
decisions were timed (``reloads``).

``--config-file`` files are benchmarked after the bench's configuration
in the same run, each on its own line with ``p50_ratio`` against it;
``--instances-per-host`` gives nodes claimed instances reporting
instance.cpu.percent, ``--warm-reports`` fills their histories first;
``bytes_per_host_after`` is the memory per host after the timed window.
``cpu_p50_ms`` is the median CPU time of the deciding thread (its
``cpu_p50_ratio`` against the first line): on a shared machine, where
other processes stretch the wall time of one configuration more than of
another, it is the steadier of the two ratios.
"""

import argparse
import gc
import json
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from concurrent import futures

import sqlalchemy as sa
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler.common import heap
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import schema
from scheduler.engine import filter_scheduler
from scheduler.request.spec import RequestSpec

DEFAULT_SIZES = (100, 1000, 10000)
METRIC_NAMES = (
    "cpu.frequency", "cpu.user.time", "cpu.kernel.time", "cpu.idle.time",
    "cpu.iowait.time", "cpu.user.percent", "cpu.kernel.percent",
    "cpu.idle.percent", "cpu.iowait.percent", "cpu.percent",
    "memory.total", "memory.used", "memory.free", "memory.available",
    "memory.percent", "network.rx.bps", "network.tx.bps", "disk.read.bps",
    "disk.write.bps", "disk.iops")
FILTERS = ["ComputeFilter", "AvailabilityZoneFilter", "RamFilter",
           "CoreFilter", "DiskFilter", "ComputeCapabilitiesFilter",
           "MetricsFilter", "ResourcesThresholdFilter"]
WEIGHERS = ["RAMWeigher", "CPUWeigher", "MetricsWeigher",
            "ResourcesWeigher"]
REQUEST = {
    "flavor": {"name": "m1.small", "vcpus": 1, "memory_mb": 512,
               "root_gb": 1, "ephemeral_gb": 0,
               "extra_specs": {
                   "capabilities:cpu_info:arch": "x86_64",
                   "resources:network.rx.bps": "<85M",
                   "resources:memory.free": "max"}},
    "num_instances": 1,
    "availability_zone": "nova",
}


#: host -> its instances (uuid, the level its cpu.percent wanders about).
Instances = dict[str, list[tuple[str, float]]]


def _metrics(rng: random.Random, now: str,
             instances: Sequence[tuple[str, float]] = ()) -> dict[str, str]:
    """A report's columns as the agent writes them: the host's metrics,
    and the instance entries apart (``instance_metrics``, None: none)."""
    memory_total = 256 * 2**30
    used = rng.uniform(0.1, 0.9) * memory_total
    values = {name: rng.uniform(0, 100) for name in METRIC_NAMES}
    values.update({"memory.total": memory_total, "memory.used": used,
                   "memory.free": memory_total - used,
                   "memory.available": memory_total - used,
                   "memory.percent": 100 * used / memory_total,
                   "network.rx.bps": rng.uniform(0, 120e6)})
    entries = [{"name": n, "value": v, "source": "bench", "timestamp": now}
               for n, v in values.items()]
    # Each instance about its own level, so that histories have a spread
    # (the risk term) and hosts differ as in service.
    measured = [{"name": "instance.cpu.percent", "instance": instance,
                 "value": min(max(rng.gauss(level, 10), 0.0), 100.0),
                 "source": "bench", "timestamp": now}
                for instance, level in instances]
    return {"metrics": json.dumps(entries),
            "instance_metrics": json.dumps(measured) if measured else None}


def _host(i: int) -> str:
    return f"node-{i:05d}"


def build_fleet(engine: sa.Engine, size: int, rng: random.Random,
                per_host: int = 0) -> Instances:
    """``size`` nodes, each with ``per_host`` claimed instances (their
    allocations rows and metrics entries); returns the instances."""
    table = models.ComputeNode.__table__
    now = models.utcnow()
    stamp = now.isoformat() + "Z"
    # No draws from rng without instances: the fleet stays as it was.
    instances: Instances = {
        _host(i): [(str(uuid.uuid4()), rng.uniform(5, 95))
                   for _ in range(per_host)]
        for i in range(size)}
    rows = [{
        "uuid": str(uuid.uuid4()), "host": _host(i),
        "hypervisor_hostname": _host(i), "cluster": "c1",
        "availability_zone": "nova", "vcpus": 64, "memory_mb": 262144,
        "local_gb": 2000, "memory_mb_used": 0, "local_gb_used": 0,
        "cpu_info": json.dumps({"arch": "x86_64", "vendor": "Intel"}),
        "networks": json.dumps(["public"]),
        **_metrics(rng, stamp, instances.get(_host(i), ())),
        "metrics_updated_at": now, "disabled": False, "generation": 0,
        "created_at": now, "updated_at": now, "changed_at": now,
    } for i in range(size)]
    with engine.begin() as connection:
        for start in range(0, size, 1000):
            connection.execute(table.insert(), rows[start:start + 1000])
        if per_host:
            _claim(connection, instances, rng, now)
    return instances


def _claim(connection: sa.Connection, instances: Instances,
           rng: random.Random, now: object) -> None:
    """The allocations rows of ``instances``, as placements leave them."""
    ids = dict(connection.execute(sa.select(
        models.ComputeNode.__table__.c.host,
        models.ComputeNode.__table__.c.id)).all())
    rows = []
    for host, placed in instances.items():
        for instance, _level in placed:
            vcpus = rng.choice((1, 2))
            rows.append({"uuid": str(uuid.uuid4()),
                         "instance_uuid": instance,
                         "compute_node_id": ids[host], "vcpus": vcpus,
                         "memory_mb": 2048 * vcpus, "disk_gb": 20,
                         "created_at": now})
    table = models.Allocation.__table__
    for start in range(0, len(rows), 5000):
        connection.execute(table.insert(), rows[start:start + 5000])


def touch_one(engine: sa.Engine, size: int, rng: random.Random,
              instances: Instances | None = None) -> None:
    """What one monitor report does to the table."""
    table = models.ComputeNode.__table__
    now = models.utcnow()
    host = _host(rng.randrange(size))
    with engine.begin() as connection:
        connection.execute(table.update().where(
            table.c.host == host).values(
            **_metrics(rng, now.isoformat() + "Z",
                       (instances or {}).get(host, ())),
            metrics_updated_at=now, updated_at=now, changed_at=now,
            generation=table.c.generation + 1))


def report_all(engine: sa.Engine, instances: Instances,
               rng: random.Random) -> None:
    """Every node reports once (one statement, many rows)."""
    table = models.ComputeNode.__table__
    now = models.utcnow()
    stamp = now.isoformat() + "Z"
    statement = table.update().where(
        table.c.host == sa.bindparam("node")).values(
        metrics=sa.bindparam("report"),
        instance_metrics=sa.bindparam("instance_report"),
        metrics_updated_at=now, updated_at=now, changed_at=now,
        generation=table.c.generation + 1)
    with engine.begin() as connection:
        connection.execute(statement, [
            {"node": host, **_report_parameters(rng, stamp, placed)}
            for host, placed in instances.items()])


def _report_parameters(rng: random.Random, stamp: str,
                       placed: Sequence[tuple[str, float]]) -> dict:
    columns = _metrics(rng, stamp, placed)
    return {"report": columns["metrics"],
            "instance_report": columns["instance_metrics"]}


def resident_bytes() -> int:
    """This process's resident memory (Linux), 0 where unknown."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def background_loads(manager: object) -> int:
    refresher = getattr(manager, "_refresher", None)
    return refresher.loads if refresher is not None else 0


def make_conf(url: str, config_files: Sequence[str] = ()
              ) -> cfg.ConfigOpts:
    """The bench's configuration, ``config_files``' options over it."""
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    # Defaults rather than overrides, so that a config file's options
    # (e.g. its weight_classes) win over the bench's.
    conf.set_default("enabled_filters", FILTERS, group="filter_scheduler")
    conf.set_default("weight_classes", WEIGHERS, group="filter_scheduler")
    conf.set_default("weight_setting", "memory.free=1.0,cpu.percent=-1.0",
                     group="metrics")
    args = [arg for path in config_files for arg in ("--config-file", path)]
    conf(args, default_config_files=[], default_config_dirs=[])
    conf.set_override("connection", url, group="database")
    return conf


def _warm(scheduler: filter_scheduler.FilterScheduler, engine: sa.Engine,
          instances: Instances, rng: random.Random, reports: int) -> None:
    """``reports`` rounds of every node reporting, a decision after each
    so that the host cache takes every report in (its histories)."""
    for _ in range(reports):
        report_all(engine, instances, rng)
        scheduler.select(RequestSpec.from_dict(REQUEST))


def bench(size: int, decisions: int, url: str | None, interval: int,
          background: bool, min_reloads: int, *,
          config_files: Sequence[str] = (), per_host: int = 0,
          warm_reports: int = 0) -> dict:
    rng = random.Random(size)
    with tempfile.TemporaryDirectory() as tmp:
        conf = make_conf(url or f"sqlite:///{tmp}/bench.sqlite",
                         config_files)
        conf.set_override("full_refresh_interval", interval,
                          group="filter_scheduler")
        engine = db_api.get_engine(conf)
        schema.db_sync(engine)
        with engine.begin() as connection:
            connection.execute(sa.delete(models.Allocation.__table__))
            connection.execute(sa.delete(models.ComputeNode.__table__))
        instances = build_fleet(engine, size, rng, per_host)
        scheduler = filter_scheduler.FilterScheduler(conf)
        manager = scheduler.host_manager
        gc.collect()
        # Start-up's free memory handed back first, as the cache hands
        # back its loads': else the first load's trim would count it off
        # the cache's growth (below zero on a small fleet).
        heap.release_free_memory()
        base = resident_bytes()
        cold = time.perf_counter()
        if background and hasattr(manager, "start_background_refresh"):
            # As a serving worker does: the refresher starts the first
            # load, the first request waits for it.
            manager.start_background_refresh()
        # The first decision builds the filters' and weighers' columns:
        # part of the cold start, not of the steady state measured next.
        scheduler.select(RequestSpec.from_dict(REQUEST))
        cold = time.perf_counter() - cold
        gc.collect()
        memory = resident_bytes() - base
        _warm(scheduler, engine, instances, rng, warm_reports)
        window = _timed_window(scheduler, engine, size, rng, decisions,
                               interval, min_reloads, instances)
        gc.collect()
        after = resident_bytes() - base
        weighers = [type(weigher).__name__ for weigher in scheduler.weighers]
        if hasattr(manager, "close"):
            manager.close()
        db_api.dispose_engines()
    return _summary(size, window, cold, memory, after) | {"weighers": weighers}


def _summary(size: int, window: dict, cold: float, memory: int,
             after: int) -> dict:
    samples = sorted(window["samples"])
    return {
        "hosts": size,
        "p50_ms": statistics.median(samples),
        "cpu_p50_ms": statistics.median(window["cpu_samples"]),
        "p99_ms": samples[min(len(samples) - 1, int(len(samples) * .99))],
        "max_ms": samples[-1],
        "per_s": 1000 / statistics.mean(samples),
        "decisions": len(samples),
        "reloads": window["reloads"],
        "cold_s": cold,
        "bytes_per_host": memory / size,
        "bytes_per_host_after": after / size,
        "rows_decoded_per_decision": (window["decoded"]
                                      / max(window["incremental"], 1)),
    }


def _timed_window(scheduler: filter_scheduler.FilterScheduler,
                  engine: sa.Engine, size: int, rng: random.Random,
                  decisions: int, interval: int, min_reloads: int,
                  instances: Instances | None = None) -> dict:
    """Decisions timed one by one (ms), a node's report before each; how
    many full loads and incremental refreshes ran, rows decoded."""
    manager = scheduler.host_manager
    samples, cpu_samples = [], []
    decoded = incremental = reloads = 0
    loads = background_loads(manager)
    began = time.monotonic()
    # Two full loads' intervals at least, and until min_reloads full
    # loads completed (a background one at 100k hosts outlasts the
    # interval), so that the window holds periodic full loads.
    while (len(samples) < decisions
           or time.monotonic() - began < 2 * interval + 0.5
           or reloads + background_loads(manager) - loads < min_reloads):
        touch_one(engine, size, rng, instances)
        started, cpu_started = time.perf_counter(), time.thread_time()
        spec = RequestSpec.from_dict(REQUEST)
        scheduler.select(spec)
        samples.append((time.perf_counter() - started) * 1000)
        cpu_samples.append((time.thread_time() - cpu_started) * 1000)
        refresh = manager.last_refresh
        if refresh.full:
            # On the request path; the background refresher's own
            # loads are counted apart.
            reloads += not background_loads(manager)
        else:
            incremental += 1
            decoded += refresh.rows_decoded
    reloads += background_loads(manager) - loads
    return {"samples": samples, "cpu_samples": cpu_samples,
            "reloads": reloads,
            "incremental": incremental, "decoded": decoded}


def _line(label: str, result: dict, default: dict | None) -> str:
    line = (f"config={label} hosts={result['hosts']} "
            f"p50_ms={result['p50_ms']:.2f} "
            f"cpu_p50_ms={result['cpu_p50_ms']:.2f} "
            f"p99_ms={result['p99_ms']:.2f} max_ms={result['max_ms']:.1f} "
            f"per_s={result['per_s']:.0f} decisions={result['decisions']} "
            f"reloads={result['reloads']} cold_s={result['cold_s']:.2f} "
            f"bytes_per_host={result['bytes_per_host']:.0f} "
            f"bytes_per_host_after={result['bytes_per_host_after']:.0f} "
            "rows_decoded_per_decision="
            f"{result['rows_decoded_per_decision']:.2f}")
    if default is not None:
        line += (f" p50_ratio={result['p50_ms'] / default['p50_ms']:.2f}"
                 " cpu_p50_ratio="
                 f"{result['cpu_p50_ms'] / default['cpu_p50_ms']:.2f}")
    return line


def _isolated(*args: object, **kwargs: object) -> dict:
    """bench() in a child process of its own: memory the previous
    configuration freed would otherwise hide what the next one adds."""
    context = multiprocessing.get_context("fork")
    with futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(bench, *args, **kwargs).result()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--hosts", type=int, action="append",
        help="fleet size (repeatable); default 100, 1000, 10000")
    add("--decisions", type=int, default=200,
        help="decisions timed per fleet size, at least (the window lasts "
        "two full-load intervals)")
    add("--full-refresh-interval", type=int, default=5,
        help="[filter_scheduler] full_refresh_interval, seconds "
        "(default 5)")
    add("--min-reloads", type=int, default=2,
        help="full loads that must complete while decisions are timed "
        "(default 2)")
    add("--no-background", action="store_true",
        help="full loads on the request path, as commands do, not in a "
        "background refresher")
    add("--db-url", default=os.environ.get("BENCH_DB_URL"),
        help="database to use (its compute_nodes and allocations tables "
        "are emptied); default a temporary SQLite file")
    add("--config-file", action="append", default=[],
        help="configuration benchmarked after the default one, its "
        "options over the bench's (repeatable)")
    add("--instances-per-host", type=int, default=0,
        help="claimed instances per node, each with an "
        "instance.cpu.percent entry in every report (default 0)")
    add("--warm-reports", type=int, default=0,
        help="reports per node before the timed window, filling "
        "instance histories (default 0)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for size in args.hosts or DEFAULT_SIZES:
        default = None
        for path in [None, *args.config_file]:
            result = _isolated(
                size, args.decisions, args.db_url,
                args.full_refresh_interval, not args.no_background,
                args.min_reloads, config_files=[path] if path else [],
                per_host=args.instances_per_host,
                warm_reports=args.warm_reports)
            label = os.path.basename(path) if path else "default"
            print(_line(label, result, default), flush=True)
            default = default or result
    return 0


if __name__ == "__main__":
    sys.exit(main())
