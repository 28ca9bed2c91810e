"""``tools/bench_claims.py``'s load: the scratch fleet with its preloaded
claims, and the forked processes whose threads claim (and release),
report or read back to back, counting what falls inside the window."""

import dataclasses
import json
import random
import signal
import threading
import time
import uuid
from multiprocessing.connection import Connection

import sqlalchemy as sa
from oslo_config import cfg

try:
    # tools/ is sys.path[0] when a tool runs as a script.
    import bench_engine
except ImportError:  # python -m tools.bench_claims
    from tools import bench_engine

from scheduler import claims
from scheduler import conf as scheduler_conf
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import schema

#: What each claim takes: bench_engine's request (m1.small).
USAGE = claims.Usage(vcpus=1, memory_mb=512, disk_gb=1)
#: Seconds a claiming process may take to report after its window.
REPORT_TIMEOUT = 120.0


# The fleet


def make_conf(url: str) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    conf.set_override("connection", url, group="database")
    return conf


def write_fleet(url: str, hosts: int, preload: int) -> list[int]:
    """The schema, ``hosts`` nodes and ``preload`` claims on each; returns
    the nodes' ids."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        schema.db_sync(engine)
        bench_engine.build_fleet(engine, hosts, random.Random(hosts))
        nodes = models.ComputeNode.__table__
        allocations = models.Allocation.__table__
        with engine.begin() as connection:
            ids = list(connection.execute(
                sa.select(nodes.c.id).order_by(nodes.c.id)).scalars())
            now = models.utcnow()
            rows = [{"uuid": str(uuid.uuid4()),
                     "instance_uuid": str(uuid.uuid4()),
                     "compute_node_id": node_id, "vcpus": USAGE.vcpus,
                     "memory_mb": USAGE.memory_mb,
                     "disk_gb": USAGE.disk_gb, "created_at": now}
                    for node_id in ids for _ in range(preload)]
            for start in range(0, len(rows), 5000):
                connection.execute(allocations.insert(),
                                   rows[start:start + 5000])
        with engine.connect() as connection:
            connection.execution_options(
                isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")
        return ids
    finally:
        engine.dispose()


# The claiming processes


@dataclasses.dataclass
class Tally:
    """What one process counted inside the window."""

    samples_ms: list[float] = dataclasses.field(default_factory=list)
    conflicts: int = 0
    errors: int = 0
    first_error: str | None = None


_NODES = models.ComputeNode.__table__
#: What compute_monitor.agent's write_report sends.
_REPORT = _NODES.update().where(_NODES.c.id == sa.bindparam("node_id")
                                ).values(generation=_NODES.c.generation + 1)


def report(engine: sa.Engine, node_id: int, rng: random.Random) -> None:
    """One monitor report of node ``node_id``."""
    now = models.utcnow()
    metrics = json.loads(bench_engine._metrics(rng, now.isoformat() + "Z")[
        "metrics"])
    used = next(m["value"] for m in metrics if m["name"] == "memory.used")
    with engine.begin() as connection:
        connection.execute(_REPORT, {
            "node_id": node_id, "metrics": json.dumps(metrics),
            "metrics_updated_at": now, "updated_at": now, "changed_at": now,
            "memory_mb_used": int(used / 2**20), "local_gb_used": 100})


_ALL_NODES = sa.select(_NODES)


def read_all(engine: sa.Engine) -> None:
    """What a full load of the host cache reads of the nodes."""
    with engine.connect() as connection:
        connection.execute(_ALL_NODES).fetchall()


def claim_loop(store: claims.Claims, node_ids: list[int], release: bool,
               mode: str, window: tuple[float, float], tally: Tally,
               lock: threading.Lock, seed: int) -> None:
    """Claim (and release), or report, back to back until the window
    ends; records the calls that start and end inside it."""
    rng = random.Random(seed)
    start_at, stop_at = window
    while True:
        began = time.time()
        if began >= stop_at:
            return
        instance = str(uuid.uuid4())
        outcome = "claimed"
        try:
            if mode == "report":
                report(store.engine, rng.choice(node_ids), rng)
            elif mode == "read":
                read_all(store.engine)
            else:
                store.claim(rng.choice(node_ids), instance, USAGE)
                if release:
                    store.release(instance)
        except claims.ClaimConflict:
            outcome = "conflict"
        except Exception as e:
            outcome = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"
        ended = time.time()
        if began < start_at or ended > stop_at:
            continue
        with lock:
            if outcome == "claimed":
                tally.samples_ms.append((ended - began) * 1000)
            elif outcome == "conflict":
                tally.conflicts += 1
            else:
                tally.errors += 1
                tally.first_error = tally.first_error or outcome


def claiming_process(url: str, node_ids: list[int], threads: int,
                     release: bool, mode: str,
                     window: tuple[float, float], seed: int,
                     pipe: Connection) -> None:
    """One process: ``threads`` threads claiming through one engine."""
    # The parent's signal handlers and engines are not this process's.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    db_api.dispose_engines()
    store = claims.Claims(make_conf(url))
    tally = Tally()
    lock = threading.Lock()
    workers = [threading.Thread(
        target=claim_loop, args=(store, node_ids, release, mode, window,
                                 tally, lock, seed * 1000 + index),
        daemon=True)
        for index in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    pipe.send(dataclasses.asdict(tally))
    # The connections (and their backends, whose CPU time the parent
    # reads) stay until the parent has read it.
    pipe.poll(REPORT_TIMEOUT)
    pipe.close()
    db_api.dispose_engines()
