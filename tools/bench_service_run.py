"""``tools/bench_service.py``'s run: the scratch fleet, the servers it
starts, the RPC client, and the cases measured against them."""

import argparse
import contextlib
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

try:
    # tools/ is sys.path[0] when a tool runs as a script.
    import bench_engine
    import bench_postgres
    import bench_service_measure as measure
    import bench_service_processes as processes
    import service_harness
except ImportError:  # python -m tools.bench_service
    from tools import bench_engine
    from tools import bench_postgres
    from tools import bench_service_measure as measure
    from tools import bench_service_processes as processes
    from tools import service_harness

from scheduler import rpc
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import schema

DEFAULT_THREADS = (1, 8)
START_TIMEOUT = processes.START_TIMEOUT
#: The script the echo server runs (``--serve-echo``).
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "bench_service.py")
#: Timeout of a measured call; the first call of a service loads every
#: host and gets START_TIMEOUT.
CALL_TIMEOUT = 30.0
CALL_RETRY = 3

# Database


def reset_fleet(engine: sa.Engine, size: int) -> float:
    """Replace every node and claim by a fleet of ``size`` nodes; returns
    the time.monotonic() of the write."""
    with engine.begin() as connection:
        connection.execute(sa.delete(models.Allocation.__table__))
        connection.execute(sa.delete(models.ComputeNode.__table__))
    bench_engine.build_fleet(engine, size, random.Random(size))
    written = time.monotonic()
    with engine.begin() as connection:
        connection.exec_driver_sql("ANALYZE")
    return written



def count_claims(engine: sa.Engine) -> int:
    with engine.connect() as connection:
        return connection.execute(sa.select(sa.func.count()).select_from(
            models.Allocation.__table__)).scalar_one()



class Bench:
    """One run: broker names, temporary files, processes, client."""

    def __init__(self, args: argparse.Namespace, stack: contextlib.ExitStack,
                 stop: threading.Event):
        self.args = args
        self.stack = stack
        self.stop = stop
        self.names = service_harness.BusNames(processes.BUS_LABEL)
        self.tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(
            prefix="bench-service-")))
        self.config_path = self.tmp / "bench.conf"
        self.metrics_port = service_harness.free_port()
        self.oslo_messaging = processes.messaging()
        #: select_destinations calls answered with a claim since the
        #: current fleet was written.
        self.succeeded = 0

    def setup(self, db_url: str) -> None:
        processes.write_config(
            self.config_path, self.names, self.args.transport_url, db_url,
            self.tmp / "state", self.args.workers, self.metrics_port)
        self.conf = processes.load_config(self.config_path)
        self.database = sa.engine.make_url(db_url).database
        self.engine = db_api.get_engine(self.conf)
        schema.db_sync(self.engine)
        self.transport = self.oslo_messaging.get_rpc_transport(
            self.conf, allowed_remote_exmods=rpc.ALLOWED_REMOTE_EXMODS)
        self.stack.callback(self.transport.cleanup)

    def client(self, topic: str, timeout: float = CALL_TIMEOUT) -> Any:
        target = self.oslo_messaging.Target(
            topic=topic, version=rpc.RPC_API_VERSION)
        return self.oslo_messaging.get_rpc_client(
            self.transport, target, timeout=timeout, retry=CALL_RETRY)

    def start(self, name: str, command: list[str]
              ) -> processes.ServerProcess:
        server = processes.ServerProcess(
            name, command, self.tmp / f"{name}.log", "Serving topic ")
        try:
            server.wait_ready()
        except BaseException:
            server.stop()
            raise
        return server

    def warm_up(self, kind: str, call: Callable[[], Any], threads: int,
                warm_until: float) -> None:
        """The untimed calls before a case."""
        warmup = measure.run_calls(call, self.args.warmup, threads,
                                   self.stop)
        self.succeeded += len(warmup.samples_ms)
        # After a fleet is written, every incremental refresh scans
        # all of it for refresh_overlap s: not the steady state.
        while time.monotonic() < warm_until:
            more = measure.run_calls(call, 50, threads, self.stop)
            self.succeeded += len(more.samples_ms)
        if warmup.errors == warmup.calls:
            raise RuntimeError(f"{kind}: every warm-up call failed: "
                               f"{warmup.first_error}")

    def db_cpu(self, claims: bool) -> dict[int, float] | None:
        """The database backends' CPU seconds, for claiming cases on a
        PostgreSQL of this machine."""
        admin_url = self.args.db_admin_url
        if not claims or not bench_postgres.is_local(admin_url):
            return None
        return bench_postgres.backend_cpu(admin_url, self.database)

    def conflicts(self, before: tuple[float, float] | None,
                  successes: int) -> float | None:
        """The conflict rate since ``before`` (claiming cases)."""
        if before is None:
            return None
        after = measure.claim_counters(self.metrics_port)
        if after[0] - before[0] < successes:
            print(f"# the exporter counted {after[0] - before[0]:g}"
                  f" claims for {successes} successful calls", flush=True)
        return measure.conflict_rate(before, after)

    def timed(self, kind: str, hosts: int | None, call: Callable[[], Any],
              calls: int, threads: int, server: processes.ServerProcess,
              claims: bool) -> measure.Result:
        """``calls`` timed calls from ``threads`` threads."""
        load1 = os.getloadavg()[0]
        counters = (measure.claim_counters(self.metrics_port) if claims
                    else None)
        db_before = self.db_cpu(claims)
        cpu = server.cpu_seconds()
        timing = measure.run_calls(call, calls, threads, self.stop)
        cpu = server.cpu_seconds() - cpu
        db_after = self.db_cpu(claims)
        db_cpu = (None if db_before is None or db_after is None else
                  bench_postgres.backend_cpu_used(db_before, db_after))
        rate = self.conflicts(counters, len(timing.samples_ms))
        self.succeeded += len(timing.samples_ms)
        if not timing.samples_ms:
            raise RuntimeError(f"{kind}: every call failed: "
                               f"{timing.first_error}")
        return measure.Result(
            kind, hosts, threads, timing, cpu * 1000 / calls, load1,
            conflict_rate=rate,
            db_cpu_ms=None if db_cpu is None else db_cpu * 1000 / calls)

    def measure_case(self, kind: str, hosts: int | None,
                     call: Callable[[], Any], calls: int,
                     server: processes.ServerProcess,
                     echo: dict[int, measure.Result] | None,
                     warm_until: float = 0.0, claims: bool = False
                     ) -> list[measure.Result]:
        """Warm up, then time ``calls`` calls, for each thread count;
        ``claims``: the calls claim, and their conflict rate is read from
        the server's exporter."""
        results = []
        for threads in self.args.threads or DEFAULT_THREADS:
            self.warm_up(kind, call, threads, warm_until)
            result = self.timed(kind, hosts, call, calls, threads, server,
                                claims)
            result.echo = None if echo is None else echo.get(threads)
            print(result.line(), flush=True)
            if result.timing.errors:
                print(f"# {result.timing.errors} failed call(s), first: "
                      f"{result.timing.first_error}", flush=True)
            results.append(result)
        return results

    def run_echo(self, notify: bool = False,
                 echo: dict[int, measure.Result] | None = None
                 ) -> list[measure.Result]:
        """The echo server's cases; ``notify``: the echo-notify ones,
        compared with ``echo``."""
        name = "echo-notify" if notify else "echo"
        server = self.start(f"{name}-server", [
            sys.executable, SCRIPT, "--serve-echo",
            os.fspath(self.config_path)] + (["--notify"] if notify else []))
        try:
            payload = bench_engine.REQUEST
            # Answers: the consumer is up and bound.
            self.client(self.names.echo_topic, START_TIMEOUT).call(
                _context(), "echo", payload=payload)
            client = self.client(self.names.echo_topic)

            def call() -> Any:
                return client.call(_context(), "echo", payload=payload)

            return self.measure_case(name, None, call, self.args.echo_calls,
                                server, echo)
        finally:
            server.stop()

    def run_select(self, hosts: int, echo: dict[int, measure.Result]
                   ) -> list[measure.Result]:
        written = reset_fleet(self.engine, hosts)
        self.succeeded = 0
        service = [service_harness.console_script("scheduler-service"),
                   "--config-file", os.fspath(self.config_path)]
        if self.args.profile_server:
            service = processes.profiled(service, Path(
                self.args.profile_server) / f"select-{hosts}.pstat")
        server = self.start(f"scheduler-service-{hosts}", service)
        try:
            spec = bench_engine.REQUEST

            def select(client: Any) -> Any:
                selections = client.call(
                    _context(), "select_destinations", request_spec=spec,
                    instance_uuids=[str(uuid.uuid4())],
                    return_alternates=False)
                if not selections[0][0].get("allocation_id"):
                    raise RuntimeError(f"no claim in {selections!r}")
                return selections

            # Answers (and loads every host): the first call.
            select(self.client(self.names.topic, START_TIMEOUT))
            self.succeeded += 1
            client = self.client(self.names.topic)
            overlap = self.conf.filter_scheduler.refresh_overlap
            results = self.measure_case("select", hosts,
                                   lambda: select(client), self.args.calls,
                                   server, echo,
                                   warm_until=written + overlap + 1,
                                   claims=True)
        finally:
            server.stop()
        claims = count_claims(self.engine)
        if claims != self.succeeded:
            print(f"# hosts={hosts}: {claims} claims in the database for "
                  f"{self.succeeded} successful calls", flush=True)
        return results




def _context() -> dict:
    # What SchedulerAPI sends: a request id correlating the logs.
    return {"request_id": f"req-{uuid.uuid4()}"}



