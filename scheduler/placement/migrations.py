"""The migrations table: moves planned by the balancers, and their claims.

A planned migration holds a claim on its destination whose consumer is
the migration's uuid, while the instance keeps its claim on the source
(Placement's pattern), so that both hosts count the instance until the
move is over. ``finish`` ends a migration: on success the instance's
claim becomes the destination one; otherwise the destination claim is
released. The statements are in ``scheduler.db.migration_sql``.
"""

import dataclasses
import datetime

import sqlalchemy as sa
from oslo_config import cfg

from scheduler.balancer import base
from scheduler.db import api as db_api
from scheduler.db import migration_agent_sql
from scheduler.db import migration_sql
from scheduler.db import models
from scheduler.db.claim_sql import write_transaction
from scheduler.request.spec import Flavor
from scheduler.request.spec import RequestSpec

PLANNED = "planned"
RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"

#: Fields of PlannedMigration that are not columns of the migrations table.
_DERIVED = ("vcpus", "bandwidth_mbps", "load_vcpus", "load_percent",
            "load_source")


#: Length of the migrations table's reason column.
_REASON_LENGTH = 255


def reason_line(reason: str | None) -> str | None:
    """One line that fits the reason column (String(255)): PostgreSQL and
    strict MariaDB refuse a longer value rather than cutting it."""
    if reason is None:
        return None
    return " ".join(reason.split())[:_REASON_LENGTH]


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
    #: The instance's CPU load the balancer counted (docs/operator-guide.md),
    #: in busy vCPUs and in % of its own vCPUs, and whether it was ``measured``
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


#: The fields of PlannedMigration that are columns, in its order.
_STORED = tuple(field.name for field in dataclasses.fields(PlannedMigration)
                if field.name not in _DERIVED)


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
        with self.engine.connect() as connection:
            return [PlannedMigration(*row)
                    for row in migration_sql.active(connection, _STORED)]

    def last_planned(self, cluster: str | None) -> datetime.datetime | None:
        """When the newest migration of ``cluster`` was planned."""
        with self.engine.connect() as connection:
            return migration_sql.last_created(connection, cluster)

    def add(self, migration: PlannedMigration) -> None:
        values = dataclasses.asdict(migration)
        for name in _DERIVED:
            del values[name]
        with self.engine.begin() as connection:
            migration_sql.insert(connection, values)

    def start(self, migration_uuid: str) -> bool:
        """planned -> running; False when it was not planned."""
        with self.engine.begin() as connection:
            return migration_sql.change_state(
                connection, migration_uuid, RUNNING, models.utcnow(),
                only_from=PLANNED)

    def finish(self, migration_uuid: str, state: str,
               reason: str | None = None, only_from: str | None = None,
               agent: str | None = None) -> bool:
        """End an active migration in ``state`` (completed, failed or
        cancelled), recording ``reason``; False when it was not active
        (or not in ``only_from``, or not held by ``agent``, when given:
        a migration agent ends only the moves whose lease it holds).

        completed: the instance's source claim is deleted and the
        destination claim passes to the instance. Otherwise the
        destination claim is released. Both nodes' change keys move, so
        that every host cache reads them again.
        """
        if state not in (COMPLETED, FAILED, CANCELLED):
            raise ValueError(f"{state!r} does not end a migration")
        now = models.utcnow()
        extra = {"progress": 100} if state == COMPLETED else {}
        with write_transaction(self.engine) as connection:
            row = migration_sql.active_one(connection, migration_uuid,
                                           only_from, agent)
            if row is None:
                return False
            # The nodes first, in id order as take() and the claims lock
            # them; then end the move only if it is still as read: a take,
            # a cancel or a reaper's steal committed since refuses this end
            # rather than being overwritten (and the claims moved twice).
            migration_agent_sql.lock_nodes(
                connection, {row.source_node_id, row.dest_node_id})
            if not migration_sql.change_state(
                    connection, migration_uuid, state, now,
                    only_from=row.state, agent=agent,
                    reason=reason_line(reason), **extra):
                return False
            migration_sql.move_claims(connection, row, state == COMPLETED,
                                      now)
        return True

    def record_landed(self, migration_uuid: str, reason: str) -> bool:
        """A move that ended failed or cancelled while its guest went on
        landing on the destination (its agent saw the job complete after
        another agent, judging where the guest ran, ended it): completed,
        with ``reason``; the instance's claim moves to the destination
        node. False when the move did not end failed or cancelled."""
        now = models.utcnow()
        with write_transaction(self.engine) as connection:
            found = migration_sql.listing(connection,
                                          migration_uuid=migration_uuid)
            if not found or found[0]["state"] not in (FAILED, CANCELLED):
                return False
            row = found[0]
            migration_agent_sql.lock_nodes(
                connection, {row["source_node_id"], row["dest_node_id"]})
            if not migration_sql.change_state(
                    connection, migration_uuid, COMPLETED, now,
                    only_from=row["state"], reason=reason_line(reason),
                    progress=100):
                return False
            migration_sql.land_claim(connection, row, now)
        return True

    def rows(self, state: str | None = None,
             migration_uuid: str | None = None) -> list[dict]:
        """The migrations as stored (every column), newest first."""
        with self.engine.connect() as connection:
            return [dict(row) for row in migration_sql.listing(
                connection, state, migration_uuid)]

    def cancel(self, migration_uuid: str, reason: str) -> str | None:
        """Cancel a move: a planned one ends cancelled, its destination
        claim released; a running one is flagged for its agent to abort
        (it then ends cancelled). The state the move was in, None when it
        was neither planned nor running."""
        if self.finish(migration_uuid, CANCELLED, reason, only_from=PLANNED):
            return PLANNED
        with self.engine.begin() as connection:
            if migration_agent_sql.request_cancel(
                    connection, migration_uuid, models.utcnow()):
                return RUNNING
        return None


def migration_spec(instance: base.Instance, cluster: str | None,
                   migration_uuid: str) -> RequestSpec:
    """The request the destination of a migration is scheduled with: the
    instance's size and group, the migration's uuid as the consumer."""
    return RequestSpec(
        flavor=Flavor(name=f"migration of {instance.uuid}",
                      vcpus=instance.vcpus,
                      memory_mb=instance.memory_mb,
                      root_gb=instance.disk_gb),
        cluster=cluster,
        scheduler_hints=({"group": instance.group} if instance.group
                         else {}),
        instance_uuids=[migration_uuid])
