"""``scheduler-service`` under load when things go wrong (issue 4).

Real worker processes behind the local RabbitMQ, claiming in PostgreSQL or
MariaDB, called by a pool of client threads through ``SchedulerAPI``:

* a race over the bus: 400 concurrent requests for a fleet with room for
  exactly 300 one-vCPU instances; 300 succeed, 100 get NoValidHost, and the
  database shows no host over capacity and no instance claimed twice;
* RabbitMQ restarted (``rabbitmqctl stop_app`` / ``start_app``) while
  requests flow: callers get bounded messaging errors, the same service
  processes serve again once the broker is back, and retried requests
  leave one claim per instance.

The database going away while requests flow is in
``test_database_restart``; the clients, the fleet and the checks these
share are in ``fault_harness``.

The RabbitMQ test restarts a node of its own (``private_rabbitmq``), never
the broker everybody on this machine uses.
"""

import collections
import concurrent.futures
import contextlib
import json
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from scheduler import claims
from scheduler import exception
from scheduler.claims import journal as release_journal
from scheduler.db import models
from tests.functional import private_servers
from tests.functional.fault_harness import ALLOCATIONS
from tests.functional.fault_harness import CAPACITY
from tests.functional.fault_harness import FAULT_WORKERS
from tests.functional.fault_harness import LOAD_THREADS
from tests.functional.fault_harness import NODES
from tests.functional.fault_harness import NOTIFICATION_LOGGER
from tests.functional.fault_harness import OUTAGE
from tests.functional.fault_harness import RECOVERY_TIMEOUT
from tests.functional.fault_harness import ROOMY_VCPUS
from tests.functional.fault_harness import _engine
from tests.functional.fault_harness import audit
from tests.functional.fault_harness import check_claims_match
from tests.functional.fault_harness import make_fleet
from tests.functional.fault_harness import retry_until_placed
from tests.functional.fault_harness import running_service
from tests.functional.fault_load import CALL_BOUND
from tests.functional.fault_load import RPC_RETRY
from tests.functional.fault_load import RPC_TIMEOUT
from tests.functional.fault_load import SPEC
from tests.functional.fault_load import Load
from tests.functional.fault_load import burst_answered
from tests.functional.fault_load import call
from tests.functional.fault_load import oslo_messaging_module
from tests.functional.fault_load import single
from tests.functional.fault_load import summary
from tests.functional.fault_load import traceback_loggers
from tests.functional.fault_load import warm_and_load
from tests.functional.rpc_harness import new_uuid
from tests.functional.rpc_harness import scheduler_api

# The race counts outcomes under contention; it does not bound latency, so
# a slow or loaded machine must not turn queueing into timeouts.
RACE_RPC_TIMEOUT = 120
RACE_CALLS = 400
RACE_THREADS = 16
RACE_WORKERS = 4


# Database


# The service


# Clients


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
        warmup = warm_and_load(api, load)
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
        burst, answered = burst_answered(api, service, log_offset)
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
    bounded = (oslo_messaging_module().MessagingTimeout,
               oslo_messaging_module().MessageDeliveryFailure)
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
