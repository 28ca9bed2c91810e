#!/usr/bin/env python3
"""Claims per second the PostgreSQL claim path sustains (docs/scaling.md).

The database is what every scheduler worker of a region shares: each
placed instance is one claim (``scheduler.claims.Claims.claim``, on
PostgreSQL the single compare-and-swap statement ``_CAS_CLAIM``, with the
row-locking transaction as its fallback), however many workers and
machines decide. This benchmark runs that claim path, unchanged, from P
processes of T threads each against a scratch database on a PostgreSQL
server, and prints how many claims per second it sustained and what they
cost the server.

In one run:

1. a scratch database ``msched_bench_claims_<hex>`` is created (the admin
   URL's user must be allowed to; the machine's PostgreSQL trusts local
   connections), the schema is created, ``--hosts`` nodes are written
   (``bench_engine``'s fleet: 64 vCPUs, 256 GiB, 2 TB each) and each
   node gets ``--preload`` claims, so that the claim's sum over the
   node's allocations reads a realistic number of rows;
2. for each ``--processes`` value, that many processes start (forked,
   each with an engine of its own, as scheduler-service workers have),
   each running ``--threads`` threads that claim 1 vCPU, 512 MB and 1 GB
   for a new instance uuid on a uniformly random node, back to back;
   with ``--release`` each claim is released again at once (the steady
   state of a region where instances come and go: one claim and one
   release per placement);
3. after ``--warmup`` seconds the claims that start and end within the
   next ``--seconds`` seconds are counted and timed.

``--report`` measures the other write every node makes instead of claims:
what a compute monitor's report does to its node's row (the metrics
column, ~20 metrics, the usage columns, the time stamps and the
generation, in one transaction, as ``compute_monitor.agent`` writes it),
on a uniformly random node: a region of N nodes reporting every I
seconds makes N / I of them per second. ``--read`` times what a host
cache's full load reads: every node row, all columns (each scheduler
worker does one every ``[filter_scheduler] full_refresh_interval``
seconds, and its incremental refreshes read each changed row once).

One machine-readable line per case::

    processes=4 threads=1 hosts=1000 kind=claim calls=12345 per_s=1234 \
p50_ms=2.9 p99_ms=9.1 db_cpu_ms=0.41 client_cpu_ms=1.10 conflicts=0 \
errors=0 load1=1.9

``kind``: ``claim``, ``claim+release``, ``report`` or ``read``;
``per_s``: calls (claims, claim-and-release pairs, reports or full reads)
per second; ``db_cpu_ms``:
CPU time of the PostgreSQL backends serving the scratch database per
call (user + system, read from /proc through
psutil, so only for a server on this machine, and without the WAL
writer, checkpointer and other shared background processes);
``client_cpu_ms``: CPU time of the claiming processes per call;
``conflicts``: claims refused because the node was full (none unless
``--hosts`` is small and ``--release`` off). The claims and this client
share the machine with the server: on a machine of few cores the client's
CPU limits ``per_s`` well before the server does, which is what
``db_cpu_ms`` (the server's cost, whoever claims) is for.

The scratch database is dropped at the end, also after a failure,
Ctrl-C or SIGTERM; the processes it started are stopped by their PIDs.

Usage: ``tools/bench_claims.py [--processes P]... [--threads T]
[--hosts N] [--preload K] [--seconds S] [--warmup S] [--release |
--report | --read] [--db-admin-url URL]``; by default 1, 2, 4 and 8 processes
of one thread on 1,000 hosts holding 20 claims each, 10 s per case after
2 s of warm-up.
"""

import argparse
import dataclasses
import multiprocessing
import os
import signal
import statistics
import sys
import time
from types import FrameType

import psutil
import sqlalchemy as sa

try:
    # tools/ is sys.path[0] when this file runs as a script.
    import bench_claims_load as load
    import bench_postgres
except ImportError:  # python -m tools.bench_claims
    from tools import bench_claims_load as load
    from tools import bench_postgres

DEFAULT_PROCESSES = (1, 2, 4, 8)


# Measurement


@dataclasses.dataclass
class Case:
    processes: int
    threads: int
    hosts: int
    seconds: float
    samples_ms: list[float]
    conflicts: int
    errors: int
    first_error: str | None
    db_cpu_s: float | None
    client_cpu_s: float
    load1: float

    @property
    def claims(self) -> int:
        return len(self.samples_ms)

    def line(self, kind: str) -> str:
        ordered = sorted(self.samples_ms) or [float("nan")]
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        per_claim = max(self.claims, 1)
        fields = [
            f"processes={self.processes}", f"threads={self.threads}",
            f"hosts={self.hosts}", f"kind={kind}",
            f"calls={self.claims}",
            f"per_s={self.claims / self.seconds:.0f}",
            f"p50_ms={statistics.median(ordered):.2f}",
            f"p99_ms={p99:.2f}",
            "db_cpu_ms=" + ("n/a" if self.db_cpu_s is None else
                            f"{self.db_cpu_s * 1000 / per_claim:.3f}"),
            f"client_cpu_ms={self.client_cpu_s * 1000 / per_claim:.3f}",
            f"conflicts={self.conflicts}", f"errors={self.errors}",
            f"load1={self.load1:.2f}"]
        return " ".join(fields)


def run_case(args: argparse.Namespace, url: str, database: str,
             node_ids: list[int], processes: int) -> Case:
    context = multiprocessing.get_context("fork")
    start_at = time.time() + args.warmup
    stop_at = start_at + args.seconds
    children = []
    try:
        for index in range(processes):
            ours, theirs = context.Pipe()
            child = context.Process(
                target=load.claiming_process,
                args=(url, node_ids, args.threads, args.release,
                      args.mode, (start_at, stop_at), index + 1, theirs),
                name=f"bench-claims-{index}", daemon=True)
            child.start()
            theirs.close()
            children.append((child, ours))
        watched = [psutil.Process(child.pid) for child, _ in children]
        local = bench_postgres.is_local(url)
        time.sleep(max(0.0, start_at - time.time()))
        load1 = os.getloadavg()[0]
        db_before = (bench_postgres.backend_cpu(args.db_admin_url, database)
                     if local else {})
        client_before = bench_postgres.process_cpu(watched)
        time.sleep(max(0.0, stop_at - time.time()))
        client_after = bench_postgres.process_cpu(watched)
        db_after = (bench_postgres.backend_cpu(args.db_admin_url, database)
                    if local else {})
        tallies = []
        for child, pipe in children:
            if not pipe.poll(load.REPORT_TIMEOUT):
                raise RuntimeError(f"{child.name} (pid {child.pid}) did not "
                                   "report")
            tallies.append(load.Tally(**pipe.recv()))
        for child, pipe in children:
            pipe.send("done")
            child.join(load.REPORT_TIMEOUT)
    finally:
        for child, _ in children:
            if child.is_alive():
                child.terminate()
                child.join(10)
    db_cpu = (bench_postgres.backend_cpu_used(db_before, db_after)
              if local and db_after else None)
    errors = [t.first_error for t in tallies if t.first_error]
    return Case(
        processes=processes, threads=args.threads, hosts=args.hosts,
        seconds=args.seconds,
        samples_ms=[s for t in tallies for s in t.samples_ms],
        conflicts=sum(t.conflicts for t in tallies),
        errors=sum(t.errors for t in tallies),
        first_error=errors[0] if errors else None, db_cpu_s=db_cpu,
        client_cpu_s=client_after - client_before, load1=load1)


def server_settings(admin_url: str) -> str:
    admin = sa.create_engine(admin_url, poolclass=sa.pool.NullPool)
    try:
        with admin.connect() as connection:
            version = connection.execute(sa.text(
                "SHOW server_version")).scalar_one()
            settings = {name: connection.execute(sa.text(
                f"SHOW {name}")).scalar_one()
                for name in ("synchronous_commit", "fsync",
                             "shared_buffers")}
    finally:
        admin.dispose()
    return f"PostgreSQL {version}, " + ", ".join(
        f"{name}={value}" for name, value in settings.items())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, action="append",
                        help="claiming processes (repeatable); default "
                        f"{', '.join(map(str, DEFAULT_PROCESSES))}")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads per process (default 1)")
    parser.add_argument("--hosts", type=int, default=1000,
                        help="nodes claimed on, uniformly (default 1000)")
    parser.add_argument("--preload", type=int, default=20,
                        help="claims each node holds before the run "
                        "(default 20)")
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="measured seconds per case (default 10)")
    parser.add_argument("--warmup", type=float, default=2.0,
                        help="seconds of claims before each case's "
                        "window (default 2)")
    parser.add_argument("--release", action="store_true",
                        help="release each claim right after making it")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--report", dest="mode", action="store_const",
                       const="report", default="claim",
                       help="time monitor reports (row updates) instead "
                       "of claims")
    modes.add_argument("--read", dest="mode", action="store_const",
                       const="read",
                       help="time full reads of every node row instead "
                       "of claims")
    bench_postgres.add_admin_url_option(parser)
    args = parser.parse_args(argv)
    args.processes = args.processes or list(DEFAULT_PROCESSES)
    if min(args.processes) < 1 or args.threads < 1 or args.hosts < 1:
        parser.error("--processes, --threads and --hosts must be >= 1")
    if args.preload < 0 or args.seconds <= 0 or args.warmup < 0:
        parser.error("--preload and --warmup must be >= 0, --seconds > 0")
    if args.release and args.mode != "claim":
        parser.error("--release goes with claims only")
    if sa.engine.make_url(args.db_admin_url).get_backend_name() \
            != "postgresql":
        parser.error("--db-admin-url must be a PostgreSQL URL")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    try:
        with bench_postgres.scratch_database(args.db_admin_url,
                                             "msched_bench_claims") as url:
            database = sa.engine.make_url(url).database
            node_ids = load.write_fleet(url, args.hosts, args.preload)
            kind = ("claim+release" if args.mode == "claim"
                    and args.release else args.mode)
            print(f"# {os.cpu_count()} CPUs, load "
                  f"{os.getloadavg()[0]:.2f}; "
                  f"{server_settings(args.db_admin_url)}; database "
                  f"{database}, {args.hosts} hosts holding {args.preload} "
                  "claims each", flush=True)
            for processes in args.processes:
                case = run_case(args, url, database, node_ids, processes)
                print(case.line(kind), flush=True)
                if case.errors:
                    print(f"# {case.errors} failed claim(s), first: "
                          f"{case.first_error}", flush=True)
    except KeyboardInterrupt:
        print("# interrupted; cleaned up", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
