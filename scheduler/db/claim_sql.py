"""The SQL of claims (made, found, kept, released), and the transaction a
claim or release runs in.

Statements are built once: constructing them per claim costs more Python
time than the database spends running them.
"""

import collections
import contextlib
from collections.abc import Iterator
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from scheduler.db.driver import DriverStatement
from scheduler.db.tables import ALLOCATIONS
from scheduler.db.tables import NODES

_BEGIN_IMMEDIATE = DriverStatement(sa.text("BEGIN IMMEDIATE"))
_READ_COMMITTED_NEXT = DriverStatement(sa.text(
    "SET TRANSACTION ISOLATION LEVEL READ COMMITTED"))


@contextlib.contextmanager
def write_transaction(engine: Engine) -> Iterator[sa.Connection]:
    """A connection in a transaction fit for read-check-write: committed
    when the block ends, rolled back when it raises.

    SQLite: ``BEGIN IMMEDIATE`` takes the write lock before the first
    read. pysqlite would otherwise start the transaction only at the
    first INSERT, after the capacity check, and two writers could both
    pass the check. PostgreSQL, MariaDB: READ COMMITTED, so that each
    statement sees what committed before it, in particular the claims of
    the transaction whose row lock we waited for (MariaDB's default
    REPEATABLE READ would keep reading the older snapshot).

    SQLAlchemy's transaction is begun here on every database, so that a
    ``DriverStatement`` may be the block's first statement: one the
    driver opened alone would not be committed with the block.
    """
    backend = engine.dialect.name
    with engine.connect() as connection:
        if backend == "sqlite":
            # Begun as SQLAlchemy's (which sends nothing on SQLite), then
            # sent on the driver's cursor: about a quarter less of the
            # transaction's own CPU than through exec_driver_sql.
            connection.begin()
            _BEGIN_IMMEDIATE.run(connection, {})
        elif backend in ("mysql", "mariadb"):
            # For the next transaction only: one statement, and nothing to
            # reset when the connection goes back to the pool.
            connection.begin()
            _READ_COMMITTED_NEXT.run(connection, {})
        else:
            # Out of the request path engine's autocommit: psycopg
            # applies it in the BEGIN it sends anyway; the pool resets it
            # on check-in.
            connection = connection.execution_options(
                isolation_level="READ COMMITTED")
            # Explicitly: the first statement may be a DriverStatement
            # (see the docstring).
            connection.begin()
        try:
            yield connection
        except BaseException:
            connection.rollback()
            raise
        connection.commit()


#: Bumps a node's generation and change time; locks its row. This one
#: and the other statements of a claim's, a keep's and a release's
#: transaction run on the driver's cursor: each is one row, where
#: SQLAlchemy's execution and result layers cost more than the database
#: (``write_transaction`` has begun SQLAlchemy's transaction for them).
BUMP = DriverStatement(
    NODES.update().where(NODES.c.id == sa.bindparam("node_id")).values(
        generation=NODES.c.generation + 1, changed_at=sa.bindparam("now")))


def _sum(column: sa.Column) -> sa.Label:
    return sa.func.coalesce(sa.func.sum(column), 0).label(
        f"{column.name}_used")


_USED = sa.select(
    _sum(ALLOCATIONS.c.vcpus), _sum(ALLOCATIONS.c.memory_mb),
    _sum(ALLOCATIONS.c.disk_gb),
).where(ALLOCATIONS.c.compute_node_id == sa.bindparam("node_id")
        ).subquery("used")


_NODE_USAGE = sa.select(
    NODES.c.uuid, NODES.c.host, NODES.c.hypervisor_hostname,
    NODES.c.generation, NODES.c.vcpus, NODES.c.memory_mb,
    NODES.c.local_gb, NODES.c.cpu_allocation_ratio,
    NODES.c.ram_allocation_ratio, NODES.c.disk_allocation_ratio,
    _USED.c.vcpus_used, _USED.c.memory_mb_used, _USED.c.disk_gb_used,
).select_from(NODES.join(_USED, sa.true())).where(
    NODES.c.id == sa.bindparam("node_id"))
#: ``NODE_USAGE``'s answer, by its columns' names. (MariaDB sums as
#: DECIMAL: the ``*_used`` are Decimals there, as they were through
#: SQLAlchemy, whose Integer converts no result.)
NodeUsage = collections.namedtuple(
    "NodeUsage", _NODE_USAGE.selected_columns.keys())
#: A node's identity, capacity, ratios and claimed resources (one scan of
#: its allocations).
NODE_USAGE = DriverStatement(_NODE_USAGE, NodeUsage._make)

#: A claim's allocation row. Every column is named: a DriverStatement
#: applies no column defaults (the id is the database's), and inline:
#: nothing is returned (PostgreSQL would send the new id back).
INSERT = DriverStatement(ALLOCATIONS.insert().values({
    name: sa.bindparam(name) for name in (
        "uuid", "instance_uuid", "compute_node_id", "vcpus", "memory_mb",
        "disk_gb", "instance_group", "created_at")}).inline())

#: PostgreSQL: the whole claim in one statement. ``node`` reads the node
#: and its claimed sums in the statement's snapshot; ``bump`` updates the
#: node only if the claim fits and its generation is still the one read
#: (after waiting for a concurrent claim's row lock PostgreSQL evaluates
#: the condition on the row as committed, so a moved generation means the
#: sums are stale and nothing is written); ``claim`` inserts only if the
#: bump did. The result is the node as read and whether it was claimed.
class SwapRow(NamedTuple):
    """``CAS_CLAIM``'s answer: the node as read, ratios resolved, and
    whether the claim was made (1) or not (0)."""

    uuid: str
    host: str
    hypervisor_hostname: str
    generation: int
    vcpus: int
    memory_mb: int
    local_gb: int
    cpu_ratio: float
    ram_ratio: float
    disk_ratio: float
    vcpus_used: int
    memory_mb_used: int
    disk_gb_used: int
    claimed: int


_CAS_CLAIM = sa.text("""
WITH node AS (
    SELECT n.id, n.generation, n.uuid, n.host, n.hypervisor_hostname,
           n.vcpus, n.memory_mb, n.local_gb,
           COALESCE(n.cpu_allocation_ratio, :cpu_ratio) AS cpu_ratio,
           COALESCE(n.ram_allocation_ratio, :ram_ratio) AS ram_ratio,
           COALESCE(n.disk_allocation_ratio, :disk_ratio) AS disk_ratio,
           u.vcpus_used, u.memory_mb_used, u.disk_gb_used
    FROM compute_nodes n, (
        SELECT COALESCE(SUM(a.vcpus), 0) AS vcpus_used,
               COALESCE(SUM(a.memory_mb), 0) AS memory_mb_used,
               COALESCE(SUM(a.disk_gb), 0) AS disk_gb_used
        FROM allocations a WHERE a.compute_node_id = :node_id) u
    WHERE n.id = :node_id
), bump AS (
    UPDATE compute_nodes c
    SET generation = c.generation + 1, changed_at = :now
    FROM node
    WHERE c.id = node.id AND c.generation = node.generation
      AND (:vcpus <= 0
           OR node.vcpus_used + :vcpus <= node.vcpus * node.cpu_ratio)
      AND (:memory_mb <= 0
           OR node.memory_mb_used + :memory_mb
              <= node.memory_mb * node.ram_ratio)
      AND (:disk_gb <= 0
           OR node.disk_gb_used + :disk_gb
              <= node.local_gb * node.disk_ratio)
    RETURNING c.id
), claim AS (
    INSERT INTO allocations (uuid, instance_uuid, compute_node_id, vcpus,
                             memory_mb, disk_gb, instance_group, created_at)
    SELECT :uuid, :instance_uuid, bump.id, :vcpus, :memory_mb, :disk_gb,
           :instance_group, :now
    FROM bump
    RETURNING id
)
SELECT node.uuid, node.host, node.hypervisor_hostname, node.generation,
       node.vcpus, node.memory_mb, node.local_gb, node.cpu_ratio,
       node.ram_ratio, node.disk_ratio, node.vcpus_used,
       node.memory_mb_used, node.disk_gb_used,
       (SELECT count(*) FROM claim) AS claimed
FROM node
""").bindparams(
    sa.bindparam("cpu_ratio", type_=sa.Float),
    sa.bindparam("ram_ratio", type_=sa.Float),
    sa.bindparam("disk_ratio", type_=sa.Float),
    sa.bindparam("vcpus", type_=sa.Integer),
    sa.bindparam("memory_mb", type_=sa.Integer),
    sa.bindparam("disk_gb", type_=sa.Integer),
    sa.bindparam("now", type_=sa.DateTime),
)
#: On the driver's cursor: a claim is one statement and one row, where
#: SQLAlchemy's execution and result layers cost more than the driver.
CAS_CLAIM = DriverStatement(_CAS_CLAIM, SwapRow._make)

CLAIMS_OF = sa.select(
    ALLOCATIONS.c.uuid, ALLOCATIONS.c.instance_uuid,
    ALLOCATIONS.c.compute_node_id, NODES.c.uuid, NODES.c.host,
    NODES.c.hypervisor_hostname, ALLOCATIONS.c.vcpus,
    ALLOCATIONS.c.memory_mb, ALLOCATIONS.c.disk_gb,
).join_from(ALLOCATIONS, NODES,
            ALLOCATIONS.c.compute_node_id == NODES.c.id).where(
    ALLOCATIONS.c.instance_uuid.in_(sa.bindparam("uuids",
                                                 expanding=True)))


_ALLOCATION = ALLOCATIONS.c.uuid == sa.bindparam("allocation_id")

#: Stamps an allocation anew (``Claims.keep``).
KEEP = DriverStatement(ALLOCATIONS.update().where(_ALLOCATION).values(
    created_at=sa.bindparam("now")))


class Release(NamedTuple):
    """A release's two statements, on one condition: the node of the
    allocation (bumped first, the order every writer locks in) and the
    delete."""

    node: DriverStatement
    delete: DriverStatement


def _release(where: sa.ColumnElement[bool]) -> Release:
    return Release(
        DriverStatement(sa.select(ALLOCATIONS.c.compute_node_id).where(
            where)),
        DriverStatement(ALLOCATIONS.delete().where(where)))


#: The claim of ``instance_uuid``.
RELEASE_INSTANCE = _release(
    ALLOCATIONS.c.instance_uuid == sa.bindparam("instance_uuid"))
#: The allocation ``allocation_id``.
RELEASE_ALLOCATION = _release(_ALLOCATION)
#: The allocation ``allocation_id`` unless stamped after ``made_before``.
RELEASE_ALLOCATION_MADE_BEFORE = _release(
    _ALLOCATION & (ALLOCATIONS.c.created_at <= sa.bindparam("made_before")))
