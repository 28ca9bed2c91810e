"""The statements on ``utilization_samples``, the balancers' cpu.percent
history (``scheduler.balancer.history`` keeps it in memory and decides
which rows to add and delete)."""

from collections.abc import Mapping
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from scheduler.db.tables import SAMPLES
from scheduler.db.tables import chunks

#: What a read returns of each sample, in this order.
_COLUMNS = (SAMPLES.c.id, SAMPLES.c.node_id, SAMPLES.c.reported_at,
            SAMPLES.c.cpu_percent, SAMPLES.c.instances)
_ALL = sa.select(*_COLUMNS).order_by(SAMPLES.c.node_id,
                                     SAMPLES.c.reported_at)
_AFTER = sa.select(*_COLUMNS).where(
    SAMPLES.c.id > sa.bindparam("after")).order_by(SAMPLES.c.id)


def read_all(connection: sa.Connection) -> list[sa.Row]:
    """(id, node_id, reported_at, cpu_percent, instances) of every
    sample, by node, oldest first."""
    return connection.execute(_ALL).all()


def read_after(connection: sa.Connection, after: int) -> list[sa.Row]:
    """The samples whose row id is above ``after``, as ``read_all()``'s,
    by row id."""
    return connection.execute(_AFTER, {"after": after}).all()


def insert_new(connection: sa.Connection,
               rows: Sequence[Mapping[str, object]]) -> None:
    """Insert ``rows``, skipping those another process inserted already
    (the unique (node_id, reported_at))."""
    connection.execute(_insert_ignoring_duplicates(connection), rows)


def delete(connection: sa.Connection, ids: Sequence[int]) -> None:
    for chunk in chunks(ids):
        connection.execute(SAMPLES.delete().where(SAMPLES.c.id.in_(chunk)))


def _insert_ignoring_duplicates(connection: sa.Connection) -> sa.Insert:
    backend = connection.dialect.name
    if backend == "postgresql":
        return postgresql.insert(SAMPLES).on_conflict_do_nothing()
    if backend == "sqlite":
        return sqlite.insert(SAMPLES).on_conflict_do_nothing()
    return SAMPLES.insert().prefix_with("IGNORE")
