#!/usr/bin/env python3
"""What a host cache's refresh costs when other scheduler workers'
claims moved some of its rows.

Workers sharing one database each keep a host cache; a claim one of
them makes moves the node's row (its generation and change time) and
adds the node's allocation, and every other worker's next refresh reads
the row again, its report unchanged. This tool writes ``bench_engine``'s
fleet (``--hosts`` nodes, 20 metrics a report) into a scratch PostgreSQL
database, loads a host cache (``HostManager``), then ``--rounds`` times
lets another writer claim on ``--claims`` random nodes (a ``Claims`` of
its own, as another worker's; the cache does not take them in) and
refreshes the cache (``host_states``). It prints the refresh's CPU time
of the calling thread per round and per row it read again
(``refresh_us``, ``per_row_us``) and how many of those rows it decoded
(``rows_decoded``; 0 once a row whose report did not change keeps its
decoding).
"""

import argparse
import random
import sys
import time
import uuid

try:
    # tools/ is sys.path[0] when this file runs as a script.
    import bench_engine
    import bench_postgres
except ImportError:  # python -m tools.bench_other_claims
    from tools import bench_engine
    from tools import bench_postgres

from scheduler.claims import Usage
from scheduler.claims.store import Claims
from scheduler.db import api as db_api
from scheduler.db import schema
from scheduler.hosts.cache.manager import HostManager


def measure(url: str, hosts: int, claims: int,
            rounds: int) -> dict[str, float]:
    conf = bench_engine.make_conf(url)
    # Full loads are the background refresher's: not the measured path.
    conf.set_override("full_refresh_interval", 10 ** 9,
                      group="filter_scheduler")
    engine = db_api.get_engine(conf)
    schema.db_sync(engine)
    rng = random.Random(hosts)
    bench_engine.build_fleet(engine, hosts, rng)
    cache = HostManager(conf)
    node_ids = [host.node_id for host in cache.host_states()]
    other_worker = Claims(conf)
    usage = Usage(vcpus=1, memory_mb=256, disk_gb=1)
    spent = 0.0
    fetched = decoded = 0
    for done in range(rounds):
        for node_id in rng.sample(node_ids, claims):
            other_worker.claim(node_id, str(uuid.uuid4()), usage)
        started = time.thread_time()
        cache.host_states()
        spent += time.thread_time() - started
        fetched += cache.last_refresh.rows_fetched
        decoded += cache.last_refresh.rows_decoded
        if done % 200 == 199:
            print(f"{done + 1}/{rounds} rounds", file=sys.stderr)
    return {"refresh_us": spent / rounds * 1e6,
            "per_row_us": spent / max(fetched, 1) * 1e6,
            "rows_fetched": fetched / rounds,
            "rows_decoded": decoded / rounds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--claims", type=int, default=4,
                        help="other workers' claims between two refreshes")
    parser.add_argument("--rounds", type=int, default=1000)
    bench_postgres.add_admin_url_option(parser)
    args = parser.parse_args(argv)
    if min(args.hosts, args.claims, args.rounds) < 1 or \
            args.claims > args.hosts:
        parser.error("--hosts, --claims and --rounds must be >= 1, "
                     "--claims at most --hosts")
    with bench_postgres.scratch_database(args.db_admin_url,
                                         "bench_other_claims") as url:
        found = measure(url, args.hosts, args.claims, args.rounds)
    print(f"hosts={args.hosts} claims={args.claims} "
          f"refresh_us={found['refresh_us']:.1f} "
          f"per_row_us={found['per_row_us']:.1f} "
          f"rows_fetched={found['rows_fetched']:.2f} "
          f"rows_decoded={found['rows_decoded']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
