"""A database server stopped and started again under a running
``scheduler-service``: requests fail with a scheduler error naming the
database while it is down, the same workers serve again once it is back,
and every instance placed holds exactly one claim.

The server is a private one (``private_postgresql``, ``private_mariadb``):
a test never stops the machine's databases; stopping it ends every
session it holds. Under load (``test_database_restart_under_load``), the
connection to the shared PostgreSQL is cut instead (a TcpProxy) while
client threads call: callers get a scheduler error naming the database,
the same processes serve again once it is back, and nothing stays
half-claimed.
"""

import collections
import threading
import time
from collections.abc import Callable

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from scheduler import rpc
from tests.functional.fault_harness import FAULT_WORKERS
from tests.functional.fault_harness import LOAD_THREADS
from tests.functional.fault_harness import OUTAGE
from tests.functional.fault_harness import RECOVERY_TIMEOUT
from tests.functional.fault_harness import ROOMY_VCPUS
from tests.functional.fault_harness import audit
from tests.functional.fault_harness import check_claims_match
from tests.functional.fault_harness import make_fleet
from tests.functional.fault_harness import retry_until_placed
from tests.functional.fault_harness import running_service
from tests.functional.fault_load import CALL_BOUND
from tests.functional.fault_load import RPC_RETRY
from tests.functional.fault_load import RPC_TIMEOUT
from tests.functional.fault_load import SPEC
from tests.functional.fault_load import Call
from tests.functional.fault_load import Load
from tests.functional.fault_load import burst_answered
from tests.functional.fault_load import call
from tests.functional.fault_load import single
from tests.functional.fault_load import summary
from tests.functional.fault_load import traceback_loggers
from tests.functional.fault_load import warm_and_load
from tests.functional.rpc_harness import new_uuid
from tests.functional.rpc_harness import scheduler_api
from tests.functional.tcp_proxy import TcpProxy

#: Short calls: the database being down is answered at once.
SERVER_RESTART_RPC_TIMEOUT = 30


def _database(server) -> str:
    """URL of a database of its own on the private server."""
    if server.url.startswith("mysql"):
        engine = sa.create_engine(server.url, isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(sa.text(
                "CREATE DATABASE scheduler CHARACTER SET utf8mb4"))
        engine.dispose()
        return server.url.rstrip("/") + "/scheduler"
    return server.url


@pytest.fixture(params=["postgresql", "mariadb"])
def server(request):
    return request.getfixturevalue(f"private_{request.param}")


def test_database_server_restarted(server, broker_url,
                                   write_config, start_console_script):
    url = _database(server)
    make_fleet(url, vcpus=ROOMY_VCPUS)
    with running_service(broker_url, url, write_config,
                         start_console_script, FAULT_WORKERS) as service, \
            scheduler_api(service.config,
                          timeout=SERVER_RESTART_RPC_TIMEOUT,
                          retry=1) as api:
        before = call(api, *single())
        assert before.ok, before.error
        server.stop()
        during = call(api, *single())
        server.start()
        deadline = time.monotonic() + RECOVERY_TIMEOUT
        after = call(api, *single())
        while not after.ok and time.monotonic() < deadline:
            time.sleep(0.5)
            after = call(api, *single())
        assert after.ok, after.error
        retried = retry_until_placed(api, [during])
        assert service.worker_pids() == service.workers
    assert type(during.error) is rpc.SchedulerInternalError
    assert "database error" in str(during.error)
    check_claims_match(url, [before, after] + retried)


# The database restarted under load


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


def _proxied(url: str) -> tuple[TcpProxy, str]:
    """A TcpProxy in front of the database of ``url``, passing, and the
    URL through it."""
    parsed = make_url(url)
    proxy = TcpProxy(parsed.host or "127.0.0.1", parsed.port or 5432)
    proxy.restore()
    return proxy, parsed.set(host="127.0.0.1", port=proxy.port
                             ).render_as_string(hide_password=False)


def _database_away(proxy: TcpProxy, load: Load) -> tuple[float, float]:
    """Cut the database away for OUTAGE s, until a call failed; the
    monotonic times of the cut and of the return."""
    proxy.cut()
    cut = time.monotonic()
    load.wait_for("failed call while the database is away",
                  lambda calls: any(not c.ok and c.started >= cut
                                    for c in calls), timeout=30)
    time.sleep(max(OUTAGE - (time.monotonic() - cut), 0))
    proxy.restore()
    return cut, time.monotonic()


def _left_partial(failed: list[Call], held: dict, stderr: str
                  ) -> tuple[list[Call], list[tuple]]:
    """Before any retry: a failed request holds claims for all of its
    instances or for none, unless the service could not undo them (the
    database was away) and said so, or its connection was cut during a
    statement (a COMMIT the database applied but could not confirm).
    The requests left partial, and those of them nothing explains."""
    partial = [c for c in failed
               if 0 < sum(u in held for u in c.uuids) < len(c.uuids)]
    unexplained = [
        (c.uuids, [held[u][0] for u in c.uuids if u in held], str(c.error))
        for c in partial
        if not all(f"Could not release claim {held[u][0]}" in stderr
                   for u in c.uuids if u in held)
        and "Connection refused" in str(c.error)]
    return partial, unexplained


def _failures(failed: list[Call]) -> str:
    """The failed calls by error type and cause, and a sample."""
    errors = collections.Counter(type(c.error).__name__ for c in failed)
    causes = collections.Counter(
        str(c.error).split("database error ", 1)[-1][:70] for c in failed)
    return (f"errors {dict(errors)}; failed multi-instance requests "
            f"{sum(len(c.uuids) > 1 for c in failed)}; causes "
            f"{dict(causes)}; sample: "
            f"{str(failed[0].error)[:300] if failed else None}")


@pytest.mark.postgresql
def test_database_restart_under_load(
        broker_url, postgresql_url, write_config,
        start_console_script):
    make_fleet(postgresql_url, vcpus=ROOMY_VCPUS)
    proxy, proxied = _proxied(postgresql_url)
    try:
        with running_service(broker_url, proxied, write_config,
                             start_console_script, FAULT_WORKERS,
                             debug=True) as service, \
                scheduler_api(service.config, timeout=RPC_TIMEOUT,
                              retry=RPC_RETRY) as api, \
                Load(api, LOAD_THREADS, _requests_of_one_or_three(),
                     pause=0.1) as load:
            warmup = warm_and_load(api, load)
            cut, back = _database_away(proxy, load)
            log_offset = len(service.process.stderr)
            recovery = load.wait_for(
                "successful call after the database came back",
                lambda calls: any(c.ok and c.started >= back
                                  for c in calls),
                timeout=RECOVERY_TIMEOUT)
            time.sleep(2)
            calls = load.stop()

            failed = [c for c in calls if not c.ok]
            partial, unexplained = _left_partial(
                failed, audit(postgresql_url).claims, service.process.stderr)
            retried = retry_until_placed(api, failed)
            burst, answered = burst_answered(api, service, log_offset)
            stderr = service.process.stderr
    finally:
        proxy.cut()

    late = [c for c in failed if c.started > back + recovery]
    print(f"\ndatabase restart: {summary(calls)}; database away "
          f"{back - cut:.1f} s; first success {recovery:.1f} s after it "
          f"was back ({len(late)} failures after that); {len(retried)} "
          f"failed calls retried to success; {_failures(failed)}; left "
          f"partial {len(partial)} (unexplained {len(unexplained)})")
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
