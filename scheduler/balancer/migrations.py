"""The migrations table: moves planned by the balancers, and their claims.

A planned migration holds a claim on its destination whose consumer is
the migration's uuid, while the instance keeps its claim on the source
(Placement's pattern), so that both hosts count the instance until the
move is over. ``finish`` ends a migration: on success the instance's
claim becomes the destination one; otherwise the destination claim is
released.
"""

import dataclasses
import datetime

import sqlalchemy as sa
from oslo_config import cfg

from scheduler.claims import write_transaction
from scheduler.db import api as db_api
from scheduler.db import models

PLANNED = "planned"
RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"

_MIGRATIONS = models.Migration.__table__
_ALLOCATIONS = models.Allocation.__table__
_NODES = models.ComputeNode.__table__


#: Fields of PlannedMigration that are not columns of the migrations table.
_DERIVED = ("vcpus", "bandwidth_mbps", "load_vcpus", "load_percent",
            "load_source")


@dataclasses.dataclass(frozen=True)
class PlannedMigration:
    """One row of the migrations table, with the vCPUs it moves."""

    uuid: str
    instance_uuid: str
    source_node_id: int
    source_host: str
    dest_node_id: int
    dest_host: str
    cluster: str | None
    cluster_policy: str
    migration_policy: str | None
    #: The destination claim; None in a dry run, which claims nothing.
    allocation_id: str | None
    state: str
    created_at: datetime.datetime
    updated_at: datetime.datetime
    vcpus: int = 0
    #: Mbps the migration may use (the migration policy's share of
    #: ``[migration] bandwidth``); None lets the hypervisor decide. Worked
    #: out when planned, not stored.
    bandwidth_mbps: int | None = None
    #: The instance's CPU load the balancer counted (DESIGN §11), in busy
    #: vCPUs and in % of its own vCPUs, and whether it was ``measured``
    #: (a fresh instance.cpu.percent) or ``assumed`` (all vCPUs busy).
    #: Known when planned, not stored: None for migrations read back.
    load_vcpus: float | None = None
    load_percent: float | None = None
    load_source: str | None = None

    def as_dict(self) -> dict:
        """JSON-safe form (notifications, RPC, CLI)."""
        values = dataclasses.asdict(self)
        for name in ("created_at", "updated_at"):
            values[name] = values[name].isoformat()
        return values


class MigrationStore:
    """The migrations table of ``[database] connection``."""

    def __init__(self, conf: cfg.ConfigOpts):
        self.conf = conf

    @property
    def engine(self) -> sa.Engine:
        return db_api.get_engine(self.conf)

    def active(self) -> list[PlannedMigration]:
        """Migrations planned or running, with the vCPUs their destination
        claim holds."""
        query = sa.select(
            *(_MIGRATIONS.c[field.name] for field
              in dataclasses.fields(PlannedMigration)
              if field.name not in _DERIVED),
            sa.func.coalesce(_ALLOCATIONS.c.vcpus, 0),
        ).join_from(_MIGRATIONS, _ALLOCATIONS,
                    _ALLOCATIONS.c.uuid == _MIGRATIONS.c.allocation_id,
                    isouter=True).where(
            _MIGRATIONS.c.state.in_(models.ACTIVE_MIGRATION_STATES))
        with self.engine.connect() as connection:
            return [PlannedMigration(*row)
                    for row in connection.execute(query).all()]

    def last_planned(self, cluster: str | None) -> datetime.datetime | None:
        """When the newest migration of ``cluster`` was planned."""
        query = sa.select(sa.func.max(_MIGRATIONS.c.created_at)).where(
            _MIGRATIONS.c.cluster.is_(None) if cluster is None
            else _MIGRATIONS.c.cluster == cluster)
        with self.engine.connect() as connection:
            return connection.execute(query).scalar()

    def add(self, migration: PlannedMigration) -> None:
        values = dataclasses.asdict(migration)
        for name in _DERIVED:
            del values[name]
        with self.engine.begin() as connection:
            connection.execute(_MIGRATIONS.insert().values(**values))

    def start(self, migration_uuid: str) -> bool:
        """planned -> running; False when it was not planned."""
        with self.engine.begin() as connection:
            return connection.execute(
                _MIGRATIONS.update().where(
                    (_MIGRATIONS.c.uuid == migration_uuid)
                    & (_MIGRATIONS.c.state == PLANNED))
                .values(state=RUNNING,
                        updated_at=models.utcnow())).rowcount == 1

    def finish(self, migration_uuid: str, state: str) -> bool:
        """End an active migration in ``state`` (completed, failed or
        cancelled); False when it was not active.

        completed: the instance's source claim is deleted and the
        destination claim passes to the instance. Otherwise the
        destination claim is released. Both nodes' change keys move, so
        that every host cache reads them again.
        """
        if state not in (COMPLETED, FAILED, CANCELLED):
            raise ValueError(f"{state!r} does not end a migration")
        now = models.utcnow()
        with write_transaction(self.engine) as connection:
            row = connection.execute(sa.select(
                _MIGRATIONS.c.instance_uuid, _MIGRATIONS.c.allocation_id,
                _MIGRATIONS.c.source_node_id, _MIGRATIONS.c.dest_node_id,
            ).where((_MIGRATIONS.c.uuid == migration_uuid)
                    & _MIGRATIONS.c.state.in_(
                        models.ACTIVE_MIGRATION_STATES))).first()
            if row is None:
                return False
            # Node rows in id order, as every writer takes them one at a
            # time: no deadlock with claims or releases.
            for node_id in sorted({row.source_node_id, row.dest_node_id}):
                connection.execute(
                    _NODES.update().where(_NODES.c.id == node_id).values(
                        generation=_NODES.c.generation + 1,
                        changed_at=now))
            destination = _ALLOCATIONS.c.uuid == row.allocation_id
            if state == COMPLETED:
                connection.execute(_ALLOCATIONS.delete().where(
                    (_ALLOCATIONS.c.instance_uuid == row.instance_uuid)
                    & (_ALLOCATIONS.c.compute_node_id
                       == row.source_node_id)))
                connection.execute(_ALLOCATIONS.update().where(
                    destination).values(instance_uuid=row.instance_uuid,
                                        created_at=now))
            else:
                connection.execute(_ALLOCATIONS.delete().where(destination))
            connection.execute(_MIGRATIONS.update().where(
                _MIGRATIONS.c.uuid == migration_uuid).values(
                    state=state, updated_at=now))
        return True
