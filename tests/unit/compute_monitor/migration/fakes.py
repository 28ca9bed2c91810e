"""A libvirt module, hypervisor connections and a domain migrating, as
the migration agent uses them; and a database with two nodes, a guest's
claim and a planned move."""

import threading
import types
import uuid

import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import models
from tests import fakes

MIGRATIONS = models.Migration.__table__
ALLOCATIONS = models.Allocation.__table__
INSTANCE = "11111111-2222-4333-8444-555555555555"


class LibvirtError(Exception):
    pass


def libvirt_module(connections: dict[str, object]) -> types.ModuleType:
    """``open(uri)`` answers the connection of ``uri``, else fails as an
    unreachable libvirtd does."""
    def open_(uri):
        if uri not in connections:
            raise LibvirtError(f"Failed to connect socket to '{uri}'")
        return connections[uri]

    flags = ("LIVE", "PEER2PEER", "PERSIST_DEST", "UNDEFINE_SOURCE",
             "AUTO_CONVERGE", "COMPRESSED", "POSTCOPY")
    module = types.ModuleType("libvirt")
    for bit, name in enumerate(flags):
        setattr(module, f"VIR_MIGRATE_{name}", 1 << bit)
    module.VIR_MIGRATE_PARAM_URI = "migrate_uri"
    module.VIR_MIGRATE_PARAM_BANDWIDTH = "bandwidth"
    module.VIR_DOMAIN_RUNNING = 1
    module.VIR_DOMAIN_PAUSED = 3
    module.VIR_DOMAIN_JOB_NONE = 0
    module.libvirtError = LibvirtError
    module.open = open_
    return module


class Domain:
    """A domain whose migration reports ``stats`` one per poll, then
    completes (or fails with ``fail``, at once)."""

    def __init__(self, stats=(), fail: str | None = None,
                 persistent: bool = False, state: int = 1,
                 job: int = 0):
        self.stats = list(stats)
        self.fail = fail
        self.persistent = persistent
        self._state = state
        self.job = job
        self.calls: list[tuple] = []
        self._ended = threading.Event()
        self.aborted = False

    def UUIDString(self) -> str:  # noqa: N802 - libvirt's name
        return INSTANCE

    def isPersistent(self) -> bool:  # noqa: N802 - libvirt's name
        return self.persistent

    def isActive(self) -> bool:  # noqa: N802 - libvirt's name
        return True

    def state(self) -> list[int]:
        return [self._state, 0]

    def jobInfo(self) -> list[int]:  # noqa: N802 - libvirt's name
        return [self.job]

    def migrateToURI3(self, uri, params, flags):  # noqa: N802
        self.calls.append(("migrate", uri, params, flags))
        if self.fail:
            raise LibvirtError(self.fail)
        self._ended.wait(10)
        if self.aborted:
            raise LibvirtError("operation aborted: migration out job: "
                               "canceled by client")

    def jobStats(self) -> dict:  # noqa: N802 - libvirt's name
        if not self.stats:
            self._ended.set()
            raise LibvirtError("domain is not running")
        return self.stats.pop(0)

    def abortJob(self) -> None:  # noqa: N802 - libvirt's name
        self.calls.append(("abortJob",))
        self.aborted = True
        self.job = 0
        self._ended.set()

    def migrateSetMaxDowntime(self, ms, flags):  # noqa: N802
        self.calls.append(("downtime", ms))

    def migrateStartPostCopy(self, flags):  # noqa: N802
        self.calls.append(("postcopy",))


class Connection:
    def __init__(self, domains: dict[str, Domain]):
        self.domains = domains

    def lookupByUUIDString(self, instance):  # noqa: N802
        if instance not in self.domains:
            raise LibvirtError(f"Domain not found: {instance}")
        return self.domains[instance]

    def close(self) -> None:
        pass


def iteration(number: int, remaining: int = 50, total: int = 100) -> dict:
    return {"memory_iteration": number, "memory_remaining": remaining,
            "memory_total": total}


def claim(engine, consumer: str, node_id: int) -> str:
    allocation = str(uuid.uuid4())
    with engine.begin() as connection:
        connection.execute(ALLOCATIONS.insert().values(
            uuid=allocation, instance_uuid=consumer,
            compute_node_id=node_id, vcpus=1, memory_mb=128, disk_gb=0,
            created_at=models.utcnow()))
    return allocation


def plan(engine, source: int, dest: int, instance: str = INSTANCE,
         dest_host: str = "h1", **values) -> str:
    """A planned move with its destination claim, as the balancer
    writes one."""
    migration = str(uuid.uuid4())
    now = models.utcnow()
    row = {"uuid": migration, "instance_uuid": instance,
           "source_node_id": source, "source_host": "h0",
           "dest_node_id": dest, "dest_host": dest_host, "cluster": "c1",
           "cluster_policy": "test", "state": "planned",
           "allocation_id": claim(engine, migration, dest),
           "created_at": now, "updated_at": now, **values}
    with engine.begin() as connection:
        connection.execute(MIGRATIONS.insert().values(**row))
    return migration


def fleet(conf) -> tuple[sa.Engine, int, int]:
    """h0 and h1, the instance's claim on h0."""
    engine = db_api.get_engine(conf)
    h0 = fakes.add_node(engine, "h0")
    h1 = fakes.add_node(engine, "h1")
    claim(engine, INSTANCE, h0)
    return engine, h0, h1


def row(engine, migration: str) -> dict:
    with engine.connect() as connection:
        return dict(connection.execute(sa.select(MIGRATIONS).where(
            MIGRATIONS.c.uuid == migration)).mappings().one())


def claims(engine, consumer: str) -> list[int]:
    with engine.connect() as connection:
        return list(connection.execute(sa.select(
            ALLOCATIONS.c.compute_node_id).where(
                ALLOCATIONS.c.instance_uuid == consumer)).scalars())
