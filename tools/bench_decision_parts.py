#!/usr/bin/env python3
"""Where the CPU time of one select_destinations goes, part by part.

``bench_service`` measures a decision over RabbitMQ as a whole; this
tool splits the in-process part. It writes ``bench_engine``'s fleet into
a scratch PostgreSQL database, then calls ``SchedulerManager
.select_destinations`` (bench_engine's filters and weighers, the service's
claim path) for one new instance per call, one thread, as a worker serves
a lone client. Each part is timed by wrapping the function that does it
with a CPU clock of the calling thread (``time.thread_time``), nested
parts counted in the innermost only:

- ``validate``: the request's schema, its RequestSpec and the filters'
  checks of it (``validate_request``, ``RequestSpec.from_dict``,
  ``FilterScheduler.validate``, which runs twice per call: once before
  anything is claimed, once in ``select``);
- ``refresh``: the host cache's refresh, its round trip included
  (``HostManager._refresh``), but for
- ``policies``: the check of the generation of the scheduling policies
  stored through the REST API (``LivePolicies.observe`` when it reads
  the counter itself, ``observed`` when the refresh's scan read it: then
  the round trip is the refresh's);
- ``engine``: filters, weighers and ranking on the refreshed table
  (``FilterScheduler._select``);
- ``claim``: the claim, one statement on PostgreSQL (``Claims.claim``);
- ``take_in``: the claim taken into the host cache, its host's state
  built again and the host table patched (``HostManager.record_claim``);
- ``rest``: everything else of the call (placement bookkeeping, the
  request's warnings, the decision's log line and counters).

Full reloads of the host cache, which a serving worker leaves to its
background thread, are kept out of the measured window.

Prints one line per part (``part=refresh cpu_ms=... share=...``), then
the total, and the PostgreSQL backends' CPU per call beside it; then the
database round trips of a call (the statements, commits and rollbacks
of every engine it used: a commit on a connection in autocommit counts
though it sends nothing, a pre-ping does not count) and what one costs
the calling thread, measured in the same run on a bare ``SELECT 1`` over
the request path's engine's driver cursor:
their product is the part of a decision no engine or cache work can
take away while it talks to the database that way. Compare
the total with ``bench_service``'s ``server_cpu_ms`` minus echo-notify's:
the difference is what the RPC layer and the notification process add
to a decision beyond what a bare oslo.messaging server spends.
"""

import argparse
import collections
import contextlib
import functools
import random
import sys
import time
import uuid
from collections.abc import Callable
from collections.abc import Iterator

import sqlalchemy as sa

try:
    # tools/ is sys.path[0] when this file runs as a script.
    import bench_engine
    import bench_postgres
except ImportError:  # python -m tools.bench_decision_parts
    from tools import bench_engine
    from tools import bench_postgres

from scheduler import manager as manager_mod
from scheduler.claims import store
from scheduler.db import api as db_api
from scheduler.db import schema
from scheduler.engine import filter_scheduler
from scheduler.hosts.cache import manager as host_cache
from scheduler.policies import live as live_policies
from scheduler.request import spec as request_spec


class PartClock:
    """CPU seconds of this thread spent in each wrapped function, the
    time of a part nested in another counted in the inner one only."""

    def __init__(self):
        self.seconds: collections.Counter[str] = collections.Counter()
        self._stack: list[list] = []

    def wrap(self, part: str, function: Callable) -> Callable:
        @functools.wraps(function)
        def timed(*args, **kwargs):
            frame = [part, time.thread_time(), 0.0]
            self._stack.append(frame)
            try:
                return function(*args, **kwargs)
            finally:
                self._stack.pop()
                spent = time.thread_time() - frame[1]
                self.seconds[part] += spent - frame[2]
                if self._stack:
                    self._stack[-1][2] += spent
        return timed


@contextlib.contextmanager
def instrumented(clock: PartClock) -> Iterator[None]:
    """The parts' functions wrapped for the duration of the block."""
    targets = [
        ("validate", manager_mod, "validate_request"),
        ("validate", request_spec.RequestSpec, "from_dict"),
        ("validate", filter_scheduler.FilterScheduler, "validate"),
        ("refresh", host_cache.HostManager, "_refresh"),
        ("policies", live_policies.LivePolicies, "observe"),
        ("policies", live_policies.LivePolicies, "observed"),
        ("engine", filter_scheduler.FilterScheduler, "_select"),
        ("claim", store.Claims, "claim"),
        ("take_in", host_cache.HostManager, "record_claim"),
    ]
    saved = [(owner, name, owner.__dict__[name])
             for _, owner, name in targets]
    try:
        for part, owner, name in targets:
            original = owner.__dict__[name]
            if isinstance(original, classmethod):
                wrapped = classmethod(clock.wrap(part, original.__func__))
            else:
                wrapped = clock.wrap(part, original)
            setattr(owner, name, wrapped)
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def measure(url: str, admin_url: str, database: str, hosts: int,
            calls: int, warmup: int) -> dict[str, float]:
    conf = bench_engine.make_conf(url)
    # The service's background refresher does these; timing it here would
    # mix its thread's clock into the parts.
    conf.set_override("full_refresh_interval", 10 ** 9,
                      group="filter_scheduler")
    engine = db_api.get_engine(conf)
    schema.db_sync(engine)
    bench_engine.build_fleet(engine, hosts, random.Random(hosts))
    with engine.begin() as connection:
        connection.exec_driver_sql("ANALYZE")
    clock = PartClock()
    with instrumented(clock):
        # Built inside: the manager keeps bound methods (refresh hooks).
        manager = manager_mod.SchedulerManager(conf)

        def decide() -> None:
            manager.select_destinations(bench_engine.REQUEST,
                                        [str(uuid.uuid4())])

        for _ in range(warmup):
            decide()
        clock.seconds.clear()
        backends = bench_postgres.backend_cpu(admin_url, database)
        # The request path's engine (no pre-ping) and the others.
        request_engine = db_api.get_engine(conf, pre_ping=False)
        with round_trips([engine, request_engine]) as sent:
            started = time.thread_time()
            for done in range(calls):
                decide()
                if done % 500 == 499:
                    print(f"{done + 1}/{calls} calls", file=sys.stderr)
            total = time.thread_time() - started
    database_cpu = bench_postgres.backend_cpu_used(
        backends, bench_postgres.backend_cpu(admin_url, database))
    parts = {part: seconds / calls * 1000
             for part, seconds in clock.seconds.items()}
    parts["rest"] = total / calls * 1000 - sum(parts.values())
    parts["total"] = total / calls * 1000
    parts["db_backend"] = database_cpu / calls * 1000
    parts["round_trips"] = sent[0] / calls
    parts["bare_round_trip"] = bare_round_trip_ms(request_engine)
    return parts


@contextlib.contextmanager
def round_trips(engines: list[sa.Engine]) -> Iterator[list[int]]:
    """A one-item list counting the statements, commits and rollbacks
    of ``engines`` during the block (the driver statements of the
    request path included: they run through the connection's hook). A
    commit or rollback counts even where the driver sends none (in
    autocommit); a pre-ping's statement does not count."""
    sent = [0]

    def count(*_args: object) -> None:
        sent[0] += 1

    listened = [(engine, event) for engine in set(engines)
                for event in ("before_cursor_execute", "commit",
                              "rollback")]
    for engine, event in listened:
        sa.event.listen(engine, event, count)
    try:
        yield sent
    finally:
        for engine, event in listened:
            sa.event.remove(engine, event, count)


def bare_round_trip_ms(engine: sa.Engine, repeat: int = 2000) -> float:
    """The calling thread's CPU milliseconds for one ``SELECT 1`` on the
    driver's cursor (the cheapest round trip the engine's driver
    makes)."""
    with engine.connect() as connection:
        cursor = connection.connection.cursor()
        for _ in range(100):
            cursor.execute("SELECT 1")
            cursor.fetchall()
        started = time.thread_time()
        for _ in range(repeat):
            cursor.execute("SELECT 1")
            cursor.fetchall()
        spent = time.thread_time() - started
        cursor.close()
    return spent / repeat * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=200)
    bench_postgres.add_admin_url_option(parser)
    args = parser.parse_args(argv)
    if min(args.hosts, args.calls) < 1 or args.warmup < 0:
        parser.error("--hosts and --calls must be >= 1, --warmup >= 0")
    with bench_postgres.scratch_database(args.db_admin_url,
                                         "bench_parts") as url:
        database = url.rsplit("/", 1)[1].split("?")[0]
        parts = measure(url, args.db_admin_url, database, args.hosts,
                        args.calls, args.warmup)
    total = parts["total"]
    for part in ("validate", "refresh", "policies", "engine", "claim",
                 "take_in", "rest"):
        spent = parts.get(part, 0.0)
        print(f"part={part} hosts={args.hosts} cpu_ms={spent:.3f} "
              f"share={spent / total:.0%}")
    print(f"part=total hosts={args.hosts} cpu_ms={total:.3f} "
          f"db_backend_cpu_ms={parts['db_backend']:.3f}")
    trips, each = parts["round_trips"], parts["bare_round_trip"]
    print(f"round_trips_per_call={trips:.2f} "
          f"bare_round_trip_cpu_ms={each:.3f} "
          f"round_trips_cpu_ms={trips * each:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
