"""The statements on the migrations table: those of the balancer's
``MigrationStore`` (``scheduler.placement.migrations``, which owns the
transactions and the rules) and the incoming counts that
``MigrationLimitFilter`` reads."""

import datetime
from collections.abc import Mapping
from collections.abc import Sequence

import sqlalchemy as sa
from oslo_config import cfg

from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db.tables import ALLOCATIONS
from scheduler.db.tables import MIGRATIONS
from scheduler.db.tables import NODES

_ACTIVE = MIGRATIONS.c.state.in_(models.ACTIVE_MIGRATION_STATES)

_INCOMING = sa.select(MIGRATIONS.c.dest_node_id, sa.func.count()).where(
    _ACTIVE).group_by(MIGRATIONS.c.dest_node_id)


def incoming_by_destination(conf: cfg.ConfigOpts) -> dict[int, int]:
    """Migrations planned or running, counted by destination node id
    (nodes that receive none are absent)."""
    with db_api.get_engine(conf).connect() as connection:
        return dict(connection.execute(_INCOMING).all())


def active(connection: sa.Connection,
           columns: Sequence[str]) -> list[sa.Row]:
    """The migrations planned or running: ``columns`` of each, then the
    vCPUs its destination claim holds (0 without a claim)."""
    query = sa.select(
        *(MIGRATIONS.c[name] for name in columns),
        sa.func.coalesce(ALLOCATIONS.c.vcpus, 0),
    ).join_from(MIGRATIONS, ALLOCATIONS,
                ALLOCATIONS.c.uuid == MIGRATIONS.c.allocation_id,
                isouter=True).where(_ACTIVE)
    return connection.execute(query).all()


def last_created(connection: sa.Connection,
                 cluster: str | None) -> datetime.datetime | None:
    """When the newest migration of ``cluster`` was planned."""
    query = sa.select(sa.func.max(MIGRATIONS.c.created_at)).where(
        MIGRATIONS.c.cluster.is_(None) if cluster is None
        else MIGRATIONS.c.cluster == cluster)
    return connection.execute(query).scalar()


def insert(connection: sa.Connection, values: Mapping[str, object]) -> None:
    connection.execute(MIGRATIONS.insert().values(**values))


def change_state(connection: sa.Connection, migration_uuid: str,
                 state: str, now: datetime.datetime,
                 only_from: str | None = None, agent: str | None = None,
                 **values: object) -> bool:
    """Set the migration's state (and the other column ``values``); with
    ``only_from``, only when it is in that state; with ``agent``, only
    when that agent holds it. False when no row changed: the check and
    the write are one statement, which waits for (and then reads) a
    concurrent writer's committed row."""
    where = MIGRATIONS.c.uuid == migration_uuid
    if only_from is not None:
        where &= MIGRATIONS.c.state == only_from
    if agent is not None:
        where &= MIGRATIONS.c.agent == agent
    return connection.execute(MIGRATIONS.update().where(where).values(
        state=state, updated_at=now, **values)).rowcount == 1


def active_one(connection: sa.Connection, migration_uuid: str,
               state: str | None = None,
               agent: str | None = None) -> sa.Row | None:
    """instance_uuid, allocation_id, source_node_id, dest_node_id and
    state of the migration, when it is planned or running (only ``state`` when
    given; only when ``agent`` holds it, when given)."""
    where = (MIGRATIONS.c.uuid == migration_uuid) & _ACTIVE
    if state is not None:
        where &= MIGRATIONS.c.state == state
    if agent is not None:
        where &= MIGRATIONS.c.agent == agent
    return connection.execute(sa.select(
        MIGRATIONS.c.instance_uuid, MIGRATIONS.c.allocation_id,
        MIGRATIONS.c.source_node_id, MIGRATIONS.c.dest_node_id,
        MIGRATIONS.c.state,
    ).where(where)).first()


def _touch_nodes(connection: sa.Connection, node_ids: set[int],
                 now: datetime.datetime) -> None:
    """Move the nodes' change keys, so that every host cache reads them
    again."""
    # Node rows in id order, as every writer takes them (the caller locked
    # them already): no deadlock with claims or releases.
    for node_id in sorted(node_ids):
        connection.execute(
            NODES.update().where(NODES.c.id == node_id).values(
                generation=NODES.c.generation + 1, changed_at=now))


def move_claims(connection: sa.Connection, row: sa.Row, completed: bool,
                now: datetime.datetime) -> None:
    """The claims of an ending migration (``row`` from ``active_one()``):
    completed, the instance's source claim is deleted and the
    destination claim becomes the instance's; otherwise the destination
    claim is deleted. Both nodes' change keys move, so that every host
    cache reads them again."""
    _touch_nodes(connection, {row.source_node_id, row.dest_node_id}, now)
    destination = ALLOCATIONS.c.uuid == row.allocation_id
    if completed:
        connection.execute(ALLOCATIONS.delete().where(
            (ALLOCATIONS.c.instance_uuid == row.instance_uuid)
            & (ALLOCATIONS.c.compute_node_id == row.source_node_id)))
        connection.execute(ALLOCATIONS.update().where(destination).values(
            instance_uuid=row.instance_uuid, created_at=now))
    else:
        connection.execute(ALLOCATIONS.delete().where(destination))


def land_claim(connection: sa.Connection, row: Mapping[str, object],
               now: datetime.datetime) -> None:
    """The instance's source claim moves to the destination node (``row``
    a migration from ``listing()``, ended and its destination claim
    released): the guest runs there. Both nodes' change keys move."""
    source, dest = row["source_node_id"], row["dest_node_id"]
    _touch_nodes(connection, {source, dest}, now)
    connection.execute(ALLOCATIONS.update().where(
        (ALLOCATIONS.c.instance_uuid == row["instance_uuid"])
        & (ALLOCATIONS.c.compute_node_id == source)).values(
            compute_node_id=dest, created_at=now))


def listing(connection: sa.Connection, state: str | None = None,
            migration_uuid: str | None = None) -> list[sa.RowMapping]:
    """Every column of the migrations (in ``state``, or the one
    ``migration_uuid``), newest first."""
    query = sa.select(MIGRATIONS).order_by(MIGRATIONS.c.created_at.desc(),
                                           MIGRATIONS.c.id.desc())
    if state is not None:
        query = query.where(MIGRATIONS.c.state == state)
    if migration_uuid is not None:
        query = query.where(MIGRATIONS.c.uuid == migration_uuid)
    return list(connection.execute(query).mappings())
