#!/usr/bin/env python3
"""Benchmark of select_destinations over RPC against a bare echo server.

In one run, over the local RabbitMQ (issue 4):

1. an echo server (a trivial oslo.messaging endpoint ``echo(ctxt,
   payload)`` returning its payload, in a separate process, threading
   executor like the service) is called with the request spec as payload,
   for each client thread count;
2. the same echo server sending, for each call, the start and end
   notifications the service sends for a select_destinations
   (``kind=echo-notify``): the bus work of a decision that costs
   nothing, the ceiling of what select_destinations can reach;
3. for each fleet size, a synthetic fleet is written (``bench_engine``'s
   ``build_fleet``) into a fresh temporary PostgreSQL database, the real
   ``scheduler-service`` console script is started on it (one worker
   unless ``--workers`` says otherwise, bench_engine's filters and
   weighers, notifications on (driver messagingv2), as a deployment
   that consumes them runs) and
   ``select_destinations`` is called for one new instance per call, each
   of which claims a host in the database, for each client thread count.

Both use the same client code path: one transport, ``RPCClient.call``
from 1 or T threads, a fresh request id per call. Each case starts with
a warm-up excluded from the statistics. Hosts have room for hundreds of
claims each, so claims never run out during a run. Nothing reports
while the benchmark runs (no monitor traffic: each claim is the only
change a refresh reads), so the service gets ``[filter_scheduler]
service_down_time`` and ``[metrics] max_age`` of a day instead of a
minute and five: the same checks, but a slow case cannot outlive the
fleet's heartbeats.

One machine-readable line per case::

    kind=echo threads=1 p50_ms=1.60 p99_ms=3.10 per_s=570 ...
    kind=select hosts=1000 threads=1 p50_ms=2.90 p99_ms=6.00 per_s=320 \
ratio_per_s=0.56 p50_delta_ms=1.30 ...

(``ratio_per_s``: throughput over the echo's with the same thread count;
``p50_delta_ms``: p50 minus the echo's), then a table with the targets
of issue 4: >= 0.7x echo throughput at 1,000 hosts, >= 0.5x at 5,000,
p50 <= echo p50 + 2 ms at 1,000 hosts. Extra fields: ``errors`` (failed
calls), ``server_cpu_ms`` (CPU time of the server process per call),
``conflict_rate`` (select cases: the fraction of the timed calls' claims
that found their host taken by a concurrent worker and had to try
another, docs/scaling.md: the service's ``scheduler_claim_conflicts_total``
over that plus ``scheduler_claims_total``, scraped from its Prometheus
exporter on a free local port before and after the timed calls),
``db_cpu_ms`` (select cases, PostgreSQL on this machine: CPU time of the
PostgreSQL backends connected to the run's database per call: claims,
host-cache refreshes, everything the service asks of the database) and
``load1`` (load average when the case started; the broker, the database,
the server and this client share the machine).

The database is dropped and the queues and exchanges of the run are
deleted at the end, also after a failure, Ctrl-C or SIGTERM. The server
processes are stopped by their PIDs.

Usage: ``tools/bench_service.py [--hosts N]... [--threads T]...
[--calls N] [--echo-calls N] [--warmup N] [--workers W]``; without
``--hosts`` / ``--threads`` the default cases (1,000 and 5,000 hosts, 1
and 8 threads) run, 2,000 timed echo (and echo-notify) and 1,000 timed
select_destinations calls per case after 200 warm-up calls (and, after
a fleet was written, at least until ``[filter_scheduler]
refresh_overlap`` s have passed: until then every refresh scans the
whole fleet). The echo servers are measured first, and stopped before
the service starts. A full default run takes about 15 minutes on
2 busy cores.

``--profile-server DIR`` runs each service under yappi (wall clock, all
threads) and writes ``DIR/select-<hosts>.pstat`` for ``pstats``: where a
decision's time goes on the server side. The profiler slows the service
several times over; its numbers are not the benchmark's.
"""

import argparse
import contextlib
import os
import signal
import sys
import threading
from types import FrameType

try:
    # tools/ is sys.path[0] when this file runs as a script.
    import bench_postgres
    import bench_service_measure as measure
    import bench_service_processes as processes
    import bench_service_run as run
    import service_harness
except ImportError:  # python -m tools.bench_service
    from tools import bench_postgres
    from tools import bench_service_measure as measure
    from tools import bench_service_processes as processes
    from tools import bench_service_run as run
    from tools import service_harness

DEFAULT_SIZES = (1000, 5000)
DEFAULT_SELECT_CALLS = 1000
DEFAULT_ECHO_CALLS = 2000
DEFAULT_WARMUP = 200
DEFAULT_RABBIT_URL = "rabbit://guest:guest@127.0.0.1:5672/"


def check_broker(url: str) -> None:
    with service_harness.kombu_connection(url) as connection:
        connection.ensure_connection(max_retries=1)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, action="append",
                        help="fleet size (repeatable); default "
                        f"{', '.join(map(str, DEFAULT_SIZES))}")
    parser.add_argument("--threads", type=int, action="append",
                        help="client threads (repeatable); default "
                        f"{', '.join(map(str, run.DEFAULT_THREADS))}")
    parser.add_argument("--calls", type=int,
                        help="timed calls per case (default "
                        f"{DEFAULT_SELECT_CALLS} select_destinations, "
                        f"{DEFAULT_ECHO_CALLS} echo)")
    parser.add_argument("--echo-calls", type=int,
                        help="timed echo calls per thread count (default "
                        "--calls, else 2000)")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP,
                        help="untimed calls before each case")
    parser.add_argument("--workers", type=int, default=1,
                        help="[scheduler] workers of the service (default "
                        "1); the echo server is one process whatever "
                        "this says")
    parser.add_argument("--transport-url",
                        default=os.environ.get("SCHEDULER_TEST_RABBIT_URL")
                        or DEFAULT_RABBIT_URL,
                        help="RabbitMQ to use (default "
                        "$SCHEDULER_TEST_RABBIT_URL or the local one)")
    bench_postgres.add_admin_url_option(parser)
    parser.add_argument("--profile-server", metavar="DIR",
                        help="run each scheduler-service under yappi and "
                        "write its profile to DIR/select-<hosts>.pstat "
                        "(slows the service: numbers are not comparable)")
    parser.add_argument("--serve-echo", metavar="CONFIG",
                        help=argparse.SUPPRESS)
    parser.add_argument("--notify", action="store_true",
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("hosts", "threads"):
        if any(value < 1 for value in getattr(args, name) or ()):
            parser.error(f"--{name} must be >= 1")
    if args.workers < 1:
        parser.error("--workers must be >= 1")
    if args.echo_calls is None:
        args.echo_calls = args.calls or DEFAULT_ECHO_CALLS
    if args.calls is None:
        args.calls = DEFAULT_SELECT_CALLS
    if min(args.calls, args.echo_calls) < 1 or args.warmup < 0:
        parser.error("--calls and --echo-calls must be >= 1, --warmup >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_echo:
        return processes.serve_echo(args.serve_echo, args.notify)
    stop = threading.Event()

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        # Client threads stop between calls; the main thread cleans up.
        stop.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    check_broker(args.transport_url)
    try:
        with contextlib.ExitStack() as stack:
            # Callbacks run last-in first-out: the client transport closes,
            # then the queues are deleted and the database dropped (the
            # servers were stopped by Bench.run_*).
            bench = run.Bench(args, stack, stop)
            db_url = stack.enter_context(
                bench_postgres.scratch_database(args.db_admin_url,
                                                "msched_bench"))
            stack.callback(bench.names.delete, args.transport_url)
            bench.setup(db_url)
            print(f"# {os.cpu_count()} CPUs, load "
                  f"{os.getloadavg()[0]:.2f}, exchange "
                  f"{bench.names.exchange}", flush=True)
            echo = bench.run_echo()
            by_threads = {result.threads: result for result in echo}
            echo += bench.run_echo(notify=True, echo=by_threads)
            selects = []
            for hosts in args.hosts or DEFAULT_SIZES:
                selects += bench.run_select(hosts, by_threads)
            measure.print_table(echo, selects)
    except KeyboardInterrupt:
        print("# interrupted; cleaned up", file=sys.stderr)
        return 130
    return 0

if __name__ == "__main__":
    sys.exit(main())

