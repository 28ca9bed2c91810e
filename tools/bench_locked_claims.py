#!/usr/bin/env python3
"""CPU time of one claim on the row-locking path (docs/scaling.md).

On SQLite and MariaDB every claim, and on PostgreSQL a claim whose
one-statement swap found the node's generation moved, is a transaction
of three statements (``Claims._locked_claim``: the node's bump, its
usage, the allocation's INSERT). ``tools/bench_claims.py`` measures the
PostgreSQL path and the database's side; this tool measures what the
claiming process spends, as the simulator claims (one thread, back to
back):

``--hosts`` nodes (``bench_engine.build_fleet``, ``--instances`` claimed
instances each) in the simulator's scratch SQLite file, or in the empty
database of ``--url``; then ``--warmup``
untimed and ``--claims`` timed claims of 1 vCPU, 512 MB and 1 GB, node
after node; with ``--release`` each is released at once (a release is
the same kind of transaction: the node found, bumped, the allocation
deleted). Prints one line::

    locked_claims hosts=1000 claims=4000 release=0 claim_us=195.2 load1=0.9

``claim_us``: CPU time (user + system) of this process per claim (with
its release). To compare two trees, run each with ``PYTHONPATH`` set to
it, alternating.
"""

import argparse
import os
import random
import sys
import time
import uuid

import sqlalchemy as sa

from scheduler import claims
from scheduler.db import api as db_api
from scheduler.db import schema
from scheduler.db.tables import NODES
from scheduler.simulation import runs as simulation_runs

try:
    # tools/ is sys.path[0] when this file runs as a script.
    import bench_claims_load
    import bench_engine
except ImportError:  # python -m tools.bench_locked_claims
    from tools import bench_claims_load
    from tools import bench_engine


def measure(url: str, hosts: int, instances: int, warmup: int,
            count: int, release: bool) -> float:
    """CPU microseconds of one claim (and its release), after ``warmup``
    of them."""
    conf = bench_claims_load.make_conf(url)
    conf.set_override("sqlite_synchronous", False, group="database")
    engine = db_api.get_engine(conf)
    schema.db_sync(engine)
    bench_engine.build_fleet(engine, hosts, random.Random(hosts),
                             instances)
    with engine.connect() as connection:
        nodes = list(connection.execute(
            sa.select(NODES.c.id).order_by(NODES.c.id)).scalars())
    store = claims.Claims(conf)
    usage = claims.Usage(1, 512, 1)

    def claim(number: int) -> None:
        instance = str(uuid.uuid4())
        store.claim(nodes[number % hosts], instance, usage)
        if release:
            store.release(instance)

    try:
        for number in range(warmup):
            claim(number)
        began = time.process_time()
        for number in range(count):
            claim(number)
        return 1e6 * (time.process_time() - began) / count
    finally:
        db_api.dispose_engines()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--instances", type=int, default=0,
                        help="claimed instances written on each node first")
    parser.add_argument("--claims", type=int, default=4000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--release", action="store_true",
                        help="release each claim at once")
    parser.add_argument("--url", help="an empty database to use (default: "
                        "a scratch SQLite file, as the simulator's)")
    args = parser.parse_args()
    if min(args.hosts, args.claims) < 1 or min(args.instances,
                                               args.warmup) < 0:
        parser.error("--hosts and --claims must be >= 1, --instances and "
                     "--warmup >= 0")
    print(f"{args.claims} claims on {args.hosts} nodes", file=sys.stderr)
    with simulation_runs.scratch_directory() as directory:
        url = args.url or f"sqlite:///{directory}/claims.sqlite"
        claim_us = measure(url, args.hosts, args.instances, args.warmup,
                           args.claims, args.release)
    print(f"locked_claims hosts={args.hosts} claims={args.claims} "
          f"release={int(args.release)} claim_us={claim_us:.1f} "
          f"load1={os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
