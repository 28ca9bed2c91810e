"""``scheduler-service`` under load when things go wrong (issue 4).

Real worker processes behind the local RabbitMQ, claiming in PostgreSQL or
MariaDB, called by a pool of client threads through ``SchedulerAPI``:

* a race over the bus: 400 concurrent requests for a fleet with room for
  exactly 300 one-vCPU instances; 300 succeed, 100 get NoValidHost, and the
  database shows no host over capacity and no instance claimed twice;
* RabbitMQ restarted (``rabbitmqctl stop_app`` / ``start_app``) while
  requests flow: callers get bounded messaging errors, the same service
  processes serve again once the broker is back, and retried requests
  leave one claim per instance;
* the database going away (a TcpProxy cut) while requests flow: callers get
  a scheduler error naming the database, the same processes serve again
  once it is back, and nothing stays half-claimed.

The RabbitMQ test restarts a node of its own (``private_rabbitmq``), never
the broker everybody on this machine uses.
"""

import collections
import concurrent.futures
import contextlib
import json
import re
import threading
import time
import types
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from scheduler import claims
from scheduler import exception
from scheduler import rpc
from scheduler.claims import journal as release_journal
from scheduler.db import models
from scheduler.rpc import rpcapi
from tests.functional import private_servers
from tests.functional.fault_harness import ALLOCATIONS
from tests.functional.fault_harness import CAPACITY
from tests.functional.fault_harness import FAULT_WORKERS
from tests.functional.fault_harness import NODES
from tests.functional.fault_harness import RECOVERY_TIMEOUT
from tests.functional.fault_harness import ROOMY_VCPUS
from tests.functional.fault_harness import SPEC
from tests.functional.fault_harness import Call
from tests.functional.fault_harness import _engine
from tests.functional.fault_harness import audit
from tests.functional.fault_harness import call
from tests.functional.fault_harness import check_claims_match
from tests.functional.fault_harness import make_fleet
from tests.functional.fault_harness import retry_until_placed
from tests.functional.fault_harness import running_service
from tests.functional.fault_harness import single
from tests.functional.rpc_harness import new_uuid
from tests.functional.rpc_harness import scheduler_api
from tests.functional.tcp_proxy import TcpProxy

#: Client side: every call ends within RPC_TIMEOUT x (RPC_RETRY + 1) plus
#: CALL_SLACK seconds, whatever the broker does.
RPC_TIMEOUT = 10
RPC_RETRY = 1
CALL_SLACK = 5
CALL_BOUND = RPC_TIMEOUT * (RPC_RETRY + 1) + CALL_SLACK

# The race counts outcomes under contention; it does not bound latency, so
# a slow or loaded machine must not turn queueing into timeouts.
RACE_RPC_TIMEOUT = 120
RACE_CALLS = 400
RACE_THREADS = 16
RACE_WORKERS = 4

LOAD_THREADS = 4
#: Seconds the broker or the database stays away.
OUTAGE = 5


#: oslo.log's default format: date, time, pid, level, logger.
ANSWERED = re.compile(
    r"^\S+ \S+ (\d+) DEBUG scheduler\.rpc\.endpoint \[[^\]]*\] "
    r"select_destinations \(request", re.MULTILINE)
TRACEBACK = re.compile(
    r"^\S+ \S+ \d+ [A-Z]+ (\S+) Traceback \(most recent call last\)",
    re.MULTILINE)
#: oslo.messaging logs each notification it could not send with a
#: traceback (and the payload); the request goes on without it.
NOTIFICATION_LOGGER = "oslo_messaging.notify.messaging"


def _messaging():
    # After scheduler.rpc selected the threading backend
    # (docs/architecture.md).
    import oslo_messaging
    return oslo_messaging


# Database


# The service


# Clients


class Load:
    """Client threads sending requests from ``start()`` until ``stop()``
    (or the end of the with block), each request for new instances;
    ``requests()`` makes (spec, instance uuids)."""

    def __init__(self, api: rpcapi.SchedulerAPI, threads: int,
                 requests: Callable[[], tuple[dict, list[str]]] = single,
                 pause: float = 0.05):
        self.api = api
        self.requests = requests
        self.pause = pause
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True)
                         for _ in range(threads)]

    def __enter__(self) -> "Load":
        return self

    def __exit__(self, *exc_info: object) -> None:
        # A failed test must not leave clients calling.
        self._stop.set()
        for thread in self._threads:
            if thread.ident is not None:
                thread.join(CALL_BOUND + 5)

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            spec, uuids = self.requests()
            done = call(self.api, spec, uuids)
            with self._lock:
                self.calls.append(done)
            self._stop.wait(self.pause)

    def snapshot(self) -> list[Call]:
        with self._lock:
            return list(self.calls)

    def wait_for(self, what: str, predicate: Callable[[list[Call]], bool],
                 timeout: float) -> float:
        """Seconds until ``predicate(calls so far)``; fails after
        ``timeout``."""
        started = time.monotonic()
        while not predicate(self.snapshot()):
            if time.monotonic() - started > timeout:
                pytest.fail(f"no {what} within {timeout} s: "
                            f"{summary(self.snapshot())}", pytrace=False)
            time.sleep(0.1)
        return time.monotonic() - started

    def stop(self) -> list[Call]:
        self._stop.set()
        for thread in self._threads:
            # A call in progress ends within its own bound.
            thread.join(CALL_BOUND + 5)
        assert not any(thread.is_alive() for thread in self._threads), \
            "a client call outlived its bound"
        return self.snapshot()


def summary(calls: list[Call]) -> str:
    errors = collections.Counter(type(c.error).__name__ for c in calls
                                 if not c.ok)
    longest = max((c.duration for c in calls), default=0.0)
    return (f"{len(calls)} calls, {sum(c.ok for c in calls)} ok, errors "
            f"{dict(errors)}, longest {longest:.1f} s")


def traceback_loggers(stderr: str) -> collections.Counter:
    """Loggers that logged a traceback, with how many."""
    return collections.Counter(TRACEBACK.findall(stderr))


def answering_workers(stderr: str) -> set[int]:
    """Pids of the workers that logged answering select_destinations."""
    return {int(pid) for pid in ANSWERED.findall(stderr)}


# 1. The race over the bus


@pytest.mark.parametrize("db_url", ["postgresql", "mysql"], indirect=True)
def test_race_over_the_bus_never_overcommits(
        db_url, broker_url, write_config,
        start_console_script):
    make_fleet(db_url)
    with running_service(broker_url, db_url, write_config,
                         start_console_script, RACE_WORKERS) as service, \
            scheduler_api(service.config, timeout=RACE_RPC_TIMEOUT,
                          retry=RPC_RETRY) as api:
        # Connects the client (reply queue) before the clock starts.
        assert api.explain(SPEC)["selected"]
        began = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(RACE_THREADS) as pool:
            calls = list(pool.map(lambda _: call(api, *single()),
                                  range(RACE_CALLS)))
        duration = time.monotonic() - began
        assert service.worker_pids() == service.workers

    placed = [c for c in calls if c.ok]
    refused = [c for c in calls if isinstance(c.error, exception.NoValidHost)]
    other = [c for c in calls if not c.ok and c not in refused]
    backend = make_url(db_url).get_backend_name()
    print(f"\nbus race backend={backend} workers={RACE_WORKERS} "
          f"threads={RACE_THREADS} calls={RACE_CALLS} "
          f"successes={len(placed)} no_valid_host={len(refused)} "
          f"other_errors={len(other)} duration_s={duration:.2f} "
          f"longest_call_s={max(c.duration for c in calls):.2f}")
    assert not other, [repr(c.error) for c in other[:3]]
    assert len(placed) == CAPACITY
    assert len(refused) == RACE_CALLS - CAPACITY
    assert all(type(c.error) is exception.NoValidHost for c in refused)
    held = check_claims_match(db_url, placed)
    assert held.used == CAPACITY


@pytest.mark.postgresql
def test_claims_left_awaiting_release_are_released_by_the_next_service(
        broker_url, postgresql_url, write_config,
        start_console_script, tmp_path):
    """A service stopped while the database was away keeps the claims it
    could not undo in its journal; the next one to start releases them."""
    make_fleet(postgresql_url)
    engine = _engine(postgresql_url)
    try:
        with engine.begin() as connection:
            node = connection.execute(sa.select(
                NODES.c.id, NODES.c.uuid, NODES.c.host,
                NODES.c.hypervisor_hostname).limit(1)).one()
            left = [claims.Claim(new_uuid(), new_uuid(), node.id, node.uuid,
                                 node.host, node.hypervisor_hostname, 1, 64,
                                 1) for _ in range(2)]
            connection.execute(ALLOCATIONS.insert(), [{
                "uuid": claim.allocation_id,
                "instance_uuid": claim.instance_uuid,
                "compute_node_id": claim.node_id, "vcpus": claim.vcpus,
                "memory_mb": claim.memory_mb, "disk_gb": claim.disk_gb,
                "created_at": models.utcnow()} for claim in left])
        # As the killed service left it: a file nobody holds.
        journal = Path(release_journal.journal_directory(
            types.SimpleNamespace(
                state_path=str(tmp_path / "state"),
                database=types.SimpleNamespace(connection=postgresql_url))))
        journal.mkdir(parents=True)
        (journal / "killed.lock").touch()
        (journal / "killed.json").write_text(json.dumps(
            [claims._record(claim) for claim in left]))
        # Two workers: both look, one adopts.
        with running_service(broker_url, postgresql_url, write_config,
                             start_console_script, 2) as service:
            deadline = time.monotonic() + 30
            while audit(postgresql_url).claims and (
                    time.monotonic() < deadline):
                time.sleep(0.2)
            stderr = service.process.stderr
        assert audit(postgresql_url).claims == {}
        assert stderr.count("Releasing 2 claim(s) that a stopped "
                            "scheduler process left") == 1
        assert list(journal.iterdir()) == []
    finally:
        engine.dispose()


# 2. RabbitMQ restarted under load


@contextlib.contextmanager
def broker_stopped(broker: private_servers.PrivateRabbitMQ
                   ) -> Iterator[None]:
    """The private node's application stopped for the block; always
    started again, and accepting connections, afterwards."""
    try:
        broker.stop_app()
        yield
    finally:
        broker.start_app()


@pytest.mark.postgresql
def test_rabbitmq_restart_under_load(
        private_rabbitmq, postgresql_url, write_config,
        start_console_script):
    broker = private_rabbitmq.url
    make_fleet(postgresql_url, vcpus=ROOMY_VCPUS)
    with running_service(broker, postgresql_url, write_config,
                         start_console_script, FAULT_WORKERS,
                         debug=True) as service, \
            scheduler_api(service.config, timeout=RPC_TIMEOUT,
                          retry=RPC_RETRY) as api, \
            Load(api, LOAD_THREADS) as load:
        warmup = call(api, *single())
        assert warmup.ok, warmup.error
        load.start()
        load.wait_for("load", lambda calls: sum(c.ok for c in calls) >= 20,
                      timeout=30)
        outage_began = time.monotonic()
        with broker_stopped(private_rabbitmq):
            down = time.monotonic()
            time.sleep(OUTAGE)
        back = time.monotonic()
        log_offset = len(service.process.stderr)
        recovery = load.wait_for(
            "successful call after the broker came back",
            lambda calls: any(c.ok and c.started >= back for c in calls),
            timeout=RECOVERY_TIMEOUT)
        time.sleep(2)
        calls = load.stop()

        failed = [c for c in calls if not c.ok]
        retried = retry_until_placed(api, failed)
        # Every worker consumes again: a burst of new requests is answered
        # by each of them.
        burst = [call(api, *single()) for _ in range(20)]
        assert all(c.ok for c in burst), summary(burst)
        answered = answering_workers(service.process.stderr[log_offset:])
        assert service.worker_pids() == service.workers
        stderr = service.process.stderr

    longest = max(c.duration for c in calls)
    # In flight while the broker was stopped.
    during = [c for c in calls if c.started <= back and c.ended >= down]
    errors = collections.Counter(type(c.error).__name__ for c in failed)
    print(f"\nrabbitmq restart: {summary(calls)}; in flight while the "
          f"broker was stopped: {summary(during)}; stop_app took "
          f"{down - outage_began:.1f} s, broker back "
          f"{back - outage_began:.1f} s after it began; first success "
          f"{recovery:.1f} s after it was back; {len(retried)} failed "
          f"calls retried to success; errors {dict(errors)}; service "
          f"tracebacks by logger {dict(traceback_loggers(stderr))}")
    bounded = (_messaging().MessagingTimeout,
               _messaging().MessageDeliveryFailure)
    assert [repr(c.error) for c in failed
            if not isinstance(c.error, bounded)] == []
    assert longest <= CALL_BOUND
    assert during, "no call was in flight while the broker was stopped"
    assert answered == set(service.workers)
    check_claims_match(postgresql_url, [warmup] + [c for c in calls if c.ok]
                       + retried + burst)
    # Lost notifications only: the scheduler's own code never failed.
    assert set(traceback_loggers(stderr)) <= {NOTIFICATION_LOGGER}
    assert "failed unexpectedly" not in stderr


# 3. The database restarted under load


def _requests_of_one_or_three() -> Callable[[], tuple[dict, list[str]]]:
    counter = iter(range(10**9))
    lock = threading.Lock()

    def make() -> tuple[dict, list[str]]:
        with lock:
            n = next(counter)
        if n % 2:
            return {**SPEC, "num_instances": 3}, [new_uuid()
                                                  for _ in range(3)]
        return single()

    return make


@pytest.mark.postgresql
def test_database_restart_under_load(
        broker_url, postgresql_url, write_config,
        start_console_script):
    make_fleet(postgresql_url, vcpus=ROOMY_VCPUS)
    url = make_url(postgresql_url)
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432)
    proxy.restore()
    proxied = url.set(host="127.0.0.1", port=proxy.port).render_as_string(
        hide_password=False)
    try:
        with running_service(broker_url, proxied, write_config,
                             start_console_script, FAULT_WORKERS,
                             debug=True) as service, \
                scheduler_api(service.config, timeout=RPC_TIMEOUT,
                              retry=RPC_RETRY) as api, \
                Load(api, LOAD_THREADS, _requests_of_one_or_three(),
                     pause=0.1) as load:
            warmup = call(api, *single())
            assert warmup.ok, warmup.error
            load.start()
            load.wait_for("load",
                          lambda calls: sum(c.ok for c in calls) >= 20,
                          timeout=30)
            proxy.cut()
            cut = time.monotonic()
            load.wait_for("failed call while the database is away",
                          lambda calls: any(not c.ok and c.started >= cut
                                            for c in calls), timeout=30)
            time.sleep(max(OUTAGE - (time.monotonic() - cut), 0))
            proxy.restore()
            back = time.monotonic()
            log_offset = len(service.process.stderr)
            recovery = load.wait_for(
                "successful call after the database came back",
                lambda calls: any(c.ok and c.started >= back
                                  for c in calls),
                timeout=RECOVERY_TIMEOUT)
            time.sleep(2)
            calls = load.stop()

            failed = [c for c in calls if not c.ok]
            # Before any retry: a failed request holds claims for all of
            # its instances or for none, unless the service could not
            # undo them (the database was away) and said so, or its
            # connection was cut during a statement (a COMMIT the
            # database applied but could not confirm).
            held = audit(postgresql_url).claims
            stderr = service.process.stderr
            partial = [c for c in failed
                       if 0 < sum(u in held for u in c.uuids)
                       < len(c.uuids)]
            unexplained = [
                (c.uuids, [held[u][0] for u in c.uuids if u in held],
                 str(c.error))
                for c in partial
                if not all(f"Could not release claim {held[u][0]}" in stderr
                           for u in c.uuids if u in held)
                and "Connection refused" in str(c.error)]
            retried = retry_until_placed(api, failed)
            burst = [call(api, *single()) for _ in range(20)]
            assert all(c.ok for c in burst), summary(burst)
            answered = answering_workers(
                service.process.stderr[log_offset:])
            assert service.worker_pids() == service.workers
            stderr = service.process.stderr
    finally:
        proxy.cut()

    errors = collections.Counter(type(c.error).__name__ for c in failed)
    causes = collections.Counter(
        str(c.error).split("database error ", 1)[-1][:70] for c in failed)
    late = [c for c in failed if c.started > back + recovery]
    print(f"\ndatabase restart: {summary(calls)}; database away "
          f"{back - cut:.1f} s; first success {recovery:.1f} s after it "
          f"was back ({len(late)} failures after that); {len(retried)} "
          f"failed calls retried to success; "
          f"errors {dict(errors)}; failed multi-instance requests "
          f"{sum(len(c.uuids) > 1 for c in failed)}, left partial "
          f"{len(partial)} (unexplained {len(unexplained)}); causes "
          f"{dict(causes)}; sample: "
          f"{str(failed[0].error)[:300] if failed else None}")
    wrong = [repr(c.error)[:300] for c in failed
             if type(c.error) is not rpc.SchedulerInternalError
             or "database error" not in str(c.error)]
    assert wrong == []
    assert any("the database is unreachable" in str(c.error)
               for c in failed)
    assert max(c.duration for c in calls) <= CALL_BOUND
    assert unexplained == []
    assert answered == set(service.workers)
    check_claims_match(postgresql_url, [warmup] + [c for c in calls if c.ok]
                       + retried + burst)
    assert traceback_loggers(stderr) == {}
