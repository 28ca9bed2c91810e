"""The statements of the node's migration agent on the migrations table
(``compute_monitor.migration.store`` owns the transactions and the
rules): taking a planned move, its lease (heartbeat) and progress, the
moves whose lease expired, a cancellation asked for by an operator."""

import datetime

import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import functions

from scheduler.db.tables import MIGRATIONS
from scheduler.db.tables import NODES

PLANNED = "planned"
RUNNING = "running"

#: The columns the agent reads of a migration.
COLUMNS = ("uuid", "instance_uuid", "source_node_id", "source_host",
           "dest_node_id", "dest_host", "cluster", "migration_policy",
           "state", "agent", "heartbeat_at", "cancel_requested")


class _UtcNow(functions.FunctionElement):
    """The database server's clock, as naive UTC (the form every timestamp
    column stores)."""

    type = sa.DateTime()
    inherit_cache = True


@compiler.compiles(_UtcNow)
def _utc_now_sqlite(element: _UtcNow, compiled: object, **kw: object) -> str:
    # SQLite is one file on one host: its 'now' is UTC, to the millisecond.
    return "strftime('%Y-%m-%d %H:%M:%f', 'now')"


@compiler.compiles(_UtcNow, "postgresql")
def _utc_now_postgresql(element: _UtcNow, compiled: object,
                        **kw: object) -> str:
    return "timezone('UTC', clock_timestamp())"


@compiler.compiles(_UtcNow, "mysql")
@compiler.compiles(_UtcNow, "mariadb")
def _utc_now_mysql(element: _UtcNow, compiled: object, **kw: object) -> str:
    return "UTC_TIMESTAMP(6)"


def database_now(connection: sa.Connection) -> datetime.datetime:
    """The database server's clock (naive UTC): leases are written and
    judged by this one clock, not by the agents' hosts' clocks, which
    may disagree by more than a lease."""
    return connection.execute(sa.select(_UtcNow())).scalar_one()


def node_id(connection: sa.Connection, host: str,
            hypervisor_hostname: str) -> int | None:
    """The id of the node row the node's compute-monitor registered."""
    return connection.execute(sa.select(NODES.c.id).where(
        (NODES.c.host == host)
        & (NODES.c.hypervisor_hostname == hypervisor_hostname))).scalar()


def _select() -> sa.Select:
    return sa.select(*(MIGRATIONS.c[name] for name in COLUMNS))


def planned_from(connection: sa.Connection, source_node_id: int
                 ) -> list[sa.Row]:
    """The planned moves leaving the node, oldest first."""
    return connection.execute(_select().where(
        (MIGRATIONS.c.source_node_id == source_node_id)
        & (MIGRATIONS.c.state == PLANNED)).order_by(
            MIGRATIONS.c.created_at, MIGRATIONS.c.id)).all()


def one(connection: sa.Connection, migration_uuid: str) -> sa.Row | None:
    return connection.execute(_select().where(
        MIGRATIONS.c.uuid == migration_uuid)).first()


def lock_nodes(connection: sa.Connection, node_ids: set[int]) -> None:
    """Lock the node rows in id order (as every writer of claims takes
    them): the agents of two sources counting the running moves into one
    destination then count one after the other. SQLite's write lock,
    taken at BEGIN IMMEDIATE, already serialises them."""
    connection.execute(sa.select(NODES.c.id).where(
        NODES.c.id.in_(sorted(node_ids))).order_by(
            NODES.c.id).with_for_update()).all()


def running_counts(connection: sa.Connection, source_node_id: int,
                   dest_node_id: int) -> tuple[int, int]:
    """Moves running out of the source and into the destination."""
    running = MIGRATIONS.c.state == RUNNING
    count = sa.select(sa.func.count()).select_from(MIGRATIONS)
    outgoing = connection.execute(count.where(
        running & (MIGRATIONS.c.source_node_id == source_node_id))).scalar()
    incoming = connection.execute(count.where(
        running & (MIGRATIONS.c.dest_node_id == dest_node_id))).scalar()
    return outgoing, incoming


def take(connection: sa.Connection, migration_uuid: str, agent: str,
         now: datetime.datetime) -> bool:
    """planned -> running, held by ``agent``; False when it was no longer
    planned (another agent took it, or it was cancelled)."""
    return connection.execute(MIGRATIONS.update().where(
        (MIGRATIONS.c.uuid == migration_uuid)
        & (MIGRATIONS.c.state == PLANNED)).values(
            state=RUNNING, agent=agent, started_at=now, heartbeat_at=now,
            updated_at=now, progress=0)).rowcount == 1


def heartbeat(connection: sa.Connection, migration_uuid: str, agent: str,
              now: datetime.datetime, progress: int | None) -> bool:
    """Renew ``agent``'s lease (and record ``progress``); False when it
    does not hold the move any more."""
    values: dict[str, object] = {"heartbeat_at": now, "updated_at": now}
    if progress is not None:
        values["progress"] = progress
    return connection.execute(MIGRATIONS.update().where(
        (MIGRATIONS.c.uuid == migration_uuid)
        & (MIGRATIONS.c.state == RUNNING)
        & (MIGRATIONS.c.agent == agent)).values(**values)).rowcount == 1


def request_cancel(connection: sa.Connection, migration_uuid: str,
                   now: datetime.datetime) -> bool:
    """Ask the agent of a running move to abort it; False when it is not
    running."""
    return connection.execute(MIGRATIONS.update().where(
        (MIGRATIONS.c.uuid == migration_uuid)
        & (MIGRATIONS.c.state == RUNNING)).values(
            cancel_requested=True, updated_at=now)).rowcount == 1


def expired(connection: sa.Connection,
            cutoff: datetime.datetime) -> list[sa.Row]:
    """Running moves whose holder last renewed its lease before
    ``cutoff``, or never did (started by ``MigrationStore.start``, which
    writes no lease: nobody would end them else)."""
    return connection.execute(_select().where(
        (MIGRATIONS.c.state == RUNNING)
        & ((MIGRATIONS.c.heartbeat_at < cutoff)
           | MIGRATIONS.c.heartbeat_at.is_(None)))).all()


def steal(connection: sa.Connection, row: sa.Row, agent: str,
          now: datetime.datetime) -> bool:
    """Take over an expired lease (``row`` from ``expired()``), unless
    someone renewed or took it since: only one reaper wins."""
    return connection.execute(MIGRATIONS.update().where(
        (MIGRATIONS.c.uuid == row.uuid)
        & (MIGRATIONS.c.state == RUNNING)
        & (MIGRATIONS.c.agent == row.agent)
        & (MIGRATIONS.c.heartbeat_at.is_(None) if row.heartbeat_at is None
           else MIGRATIONS.c.heartbeat_at == row.heartbeat_at)).values(
            agent=agent, heartbeat_at=now, updated_at=now)).rowcount == 1
