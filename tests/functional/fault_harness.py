"""Helpers shared by the fault tests (a service stopped, a database or
broker restarted): a fleet of known capacity, a running service, calls
retried until placed and the claims checked against the placements."""

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from scheduler.db import models
from scheduler.db import schema
from scheduler.rpc import rpcapi
from tests.functional.fault_load import Call
from tests.functional.fault_load import Running
from tests.functional.fault_load import call
from tests.functional.rpc_harness import SERVING
from tests.functional.rpc_harness import wait_for_log
from tools.service_harness import BusNames

HOSTS = 30


VCPUS_PER_HOST = 10


CAPACITY = HOSTS * VCPUS_PER_HOST


NODES = models.ComputeNode.__table__


ALLOCATIONS = models.Allocation.__table__


#: The fault tests use a fleet that never fills up.
ROOMY_VCPUS = 1000


FAULT_WORKERS = 2


#: Seconds the service may take to serve again once it is back.
RECOVERY_TIMEOUT = 60


def _engine(url: str) -> sa.Engine:
    return sa.create_engine(url, poolclass=sa.pool.NullPool)


def make_fleet(url: str, vcpus: int = VCPUS_PER_HOST) -> None:
    """Schema plus HOSTS enabled nodes of ``vcpus`` vCPUs each (ratio 1.0),
    RAM and disk plentiful."""
    engine = _engine(url)
    try:
        schema.db_sync(engine)
        now = models.utcnow()
        with engine.begin() as connection:
            connection.execute(NODES.insert(), [{
                "uuid": str(uuid.uuid4()), "host": f"host{i:02d}",
                "hypervisor_hostname": f"host{i:02d}.example.org",
                "cluster": "c1", "availability_zone": "nova",
                "vcpus": vcpus, "memory_mb": 1024 * 1024,
                "local_gb": 100000, "cpu_allocation_ratio": 1.0,
                "metrics_updated_at": now, "changed_at": now,
                "updated_at": now} for i in range(HOSTS)])
    finally:
        engine.dispose()


@dataclasses.dataclass
class Audit:
    """What the database holds after a run."""

    #: (host, vCPUs claimed) of every host claimed past capacity x ratio.
    over: list[tuple[str, int]]
    #: vCPUs claimed in all.
    used: int
    #: Instances holding more than one allocation.
    doubles: list[str]
    #: instance uuid -> (allocation uuid, host).
    claims: dict[str, tuple[str, str]]


def audit(url: str) -> Audit:
    """The capacity check of test_claims_race, in SQL."""
    engine = _engine(url)
    try:
        with engine.connect() as connection:
            usage = connection.execute(
                sa.select(NODES.c.host, NODES.c.vcpus,
                          NODES.c.cpu_allocation_ratio,
                          sa.func.coalesce(sa.func.sum(ALLOCATIONS.c.vcpus),
                                           0))
                .join_from(NODES, ALLOCATIONS, isouter=True)
                .group_by(NODES.c.id, NODES.c.host, NODES.c.vcpus,
                          NODES.c.cpu_allocation_ratio)).all()
            doubles = connection.execute(
                sa.select(ALLOCATIONS.c.instance_uuid)
                .group_by(ALLOCATIONS.c.instance_uuid)
                .having(sa.func.count() > 1)).scalars().all()
            rows = connection.execute(
                sa.select(ALLOCATIONS.c.instance_uuid, ALLOCATIONS.c.uuid,
                          NODES.c.host)
                .join_from(ALLOCATIONS, NODES)).all()
    finally:
        engine.dispose()
    return Audit(
        over=[(host, used) for host, vcpus, ratio, used in usage
              if used > vcpus * ratio],
        used=sum(int(used) for *_, used in usage),
        doubles=list(doubles),
        claims={instance: (allocation, host)
                for instance, allocation, host in rows})


def service_sections(names: BusNames, broker: str, db_url: str,
                     workers: int, debug: bool = False) -> dict:
    sections = names.sections(broker)
    sections["DEFAULT"]["debug"] = debug
    sections["database"] = {"connection": db_url, "connect_timeout": 3}
    sections["scheduler"] = {"workers": workers}
    sections["filter_scheduler"] = {
        "cpu_allocation_ratio": 1.0,
        # Spreads concurrent decisions over the best hosts, as in
        # test_claims_race.
        "host_subset_size": 5,
        # Heartbeats are written once, with the fleet.
        "service_down_time": 3600,
        "full_refresh_interval": 5}
    # Reconnect quickly once the broker is back (service and clients read
    # the same file).
    sections["oslo_messaging_rabbit"].update({
        "rabbit_retry_interval": 1, "rabbit_retry_backoff": 1,
        "rabbit_interval_max": 2, "kombu_reconnect_delay": 0.5})
    return sections


@contextlib.contextmanager
def running_service(broker: str, db_url: str, write_config,
                    start_console_script, workers: int,
                    debug: bool = False) -> Iterator[Running]:
    """A scheduler-service with ``workers`` worker processes, serving once
    every worker logged it; stopped (status 0) and its queues deleted
    after the block."""
    names = BusNames()
    config = write_config(service_sections(names, broker, db_url, workers,
                                           debug))
    process = start_console_script("scheduler-service", config_file=config)
    try:
        wait_for_log(lambda: process.stderr, SERVING, process=process.popen,
                     count=workers)
        running = Running(config, process, [])
        running.workers = running.worker_pids()
        assert len(running.workers) == workers
        yield running
        assert process.popen.poll() is None, process.stderr
        assert process.stop(timeout=60) == 0, process.stderr
    finally:
        # Stopped first: a consumer whose queue is deleted declares it
        # again.
        process.stop()
        names.delete(broker)


def retry_until_placed(api: rpcapi.SchedulerAPI, failed: list[Call],
                       timeout: float = RECOVERY_TIMEOUT) -> list[Call]:
    """What a caller does after a failure: the same request, for the same
    instances, until it succeeds."""
    deadline = time.monotonic() + timeout
    placed = []
    for first in failed:
        while True:
            again = call(api, first.spec, first.uuids)
            if again.ok:
                placed.append(again)
                break
            if time.monotonic() > deadline:
                pytest.fail(f"retrying {first.uuids} still fails after "
                            f"{timeout} s: {again.error!r}", pytrace=False)
            time.sleep(0.5)
    return placed


def check_claims_match(db_url: str, placed: list[Call]) -> Audit:
    """Every instance holds exactly the claim its caller was last given,
    and nothing else is claimed."""
    seen: dict[str, tuple[str, str]] = {}
    for done in placed:
        seen.update(done.claims())
    held = audit(db_url)
    assert held.doubles == []
    assert held.over == []
    assert sorted(held.claims) == sorted(seen)
    assert held.claims == seen
    return held


LOAD_THREADS = 4


#: Seconds the broker or the database stays away.
OUTAGE = 5


#: oslo.messaging logs each notification it could not send with a
#: traceback (and the payload); the request goes on without it.
NOTIFICATION_LOGGER = "oslo_messaging.notify.messaging"


