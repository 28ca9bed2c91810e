"""The host cache's reads of the database: the row shapes it reads and
the statements it runs, built once (building one costs more than running
it on a small result)."""

import datetime
import functools
import threading
from collections.abc import Callable
from collections.abc import Sequence
from typing import NamedTuple

import sqlalchemy as sa

from scheduler.db.driver import DriverStatement
from scheduler.db.tables import ALLOCATIONS
from scheduler.db.tables import NODES


class NodeRow(NamedTuple):
    """The columns a HostState is made of; the agent's own usage figures
    and the registration time are not needed to schedule."""

    id: int
    uuid: str
    host: str
    hypervisor_hostname: str
    cluster: str | None
    availability_zone: str | None
    vcpus: int
    memory_mb: int
    local_gb: int
    cpu_allocation_ratio: float | None
    ram_allocation_ratio: float | None
    disk_allocation_ratio: float | None
    cpu_info: str
    networks: str
    metrics: str
    metrics_updated_at: datetime.datetime | None
    disabled: bool
    disabled_reason: str | None
    generation: int
    changed_at: datetime.datetime
    updated_at: datetime.datetime
    #: The report's instance entries (schema revision 0007), last: rows
    #: built by hand may leave it out.
    instance_metrics: str | None = None


class KeyRow(NamedTuple):
    id: int
    changed_at: datetime.datetime
    generation: int


class AllocationRow(NamedTuple):
    compute_node_id: int
    instance_uuid: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    instance_group: str | None
    created_at: datetime.datetime


def select(table: sa.Table, shape: type[NamedTuple]) -> sa.Select:
    return sa.select(*(table.c[name] for name in shape._fields))


def fetch(connection: sa.Connection, query: sa.Select,
           shape: type[NamedTuple], **parameters: object) -> list:
    # Plain tuples: attribute access on SQLAlchemy rows costs several times
    # more, and a full load reads tens of thousands of rows.
    return [shape._make(row)
            for row in connection.execute(query, parameters).all()]


#: Rows a background full load handles between two ``pace()`` calls:
#: ~2 ms of work, below the interpreter's 5 ms switch interval, so that a
#: request waits for the GIL no longer than one slice.
PACE_ROWS = 100


def fetch_paced(connection: sa.Connection, query: sa.Select,
                 shape: type[NamedTuple], pace: Callable[[], None]) -> list:
    """``fetch()`` in slices, calling ``pace()`` after each."""
    rows: list = []
    for part in connection.execute(query).partitions(PACE_ROWS):
        rows.extend(map(shape._make, part))
        pace()
    return rows


# The statements of an incremental refresh, built once: building one
# costs more than running it on a small result.
ALL_NODES = select(NODES, NodeRow)
ALL_ALLOCATIONS = select(ALLOCATIONS, AllocationRow)
ALL_KEYS = select(NODES, KeyRow)
KEYS_SINCE = ALL_KEYS.where(NODES.c.changed_at >= sa.bindparam("since"))
NODES_AFTER = select(NODES, NodeRow).where(
    NODES.c.changed_at > sa.bindparam("after"))
NODES_BY_ID = select(NODES, NodeRow).where(
    NODES.c.id.in_(sa.bindparam("ids", expanding=True)))
WINDOW_PROBE = sa.select(
    sa.func.count(),
    sa.func.coalesce(sa.func.sum(NODES.c.generation), 0)).where(
    NODES.c.changed_at >= sa.bindparam("since"),
    NODES.c.changed_at <= sa.bindparam("until"))


class Scan(NamedTuple):
    """What ``scan_after()`` read: the rows stamped after the watermark
    and the probes' values, in the order of the probes."""

    rows: list[NodeRow]
    probed: tuple


_FIELDS = len(NodeRow._fields)
#: ``NodeRow._make`` without its Python frame (and its length check: the
#: statement selects the fields): one call per changed row.
_as_node = functools.partial(tuple.__new__, NodeRow)
_scans: dict[tuple[int, ...], tuple[Sequence, DriverStatement]] = {}
_scans_lock = threading.Lock()


def _scan_statement(probes: Sequence[sa.ScalarSelect]) -> DriverStatement:
    """``NODES_AFTER`` with ``probes`` as extra columns, on the driver's
    cursor. The nodes are outer-joined to a one-row table so that the
    probes come back when no node changed, on a row of NULL nodes."""
    key = tuple(map(id, probes))
    with _scans_lock:
        # The probes are kept with their statement, so that no other
        # object reuses their ids.
        known = _scans.get(key)
        if known is not None:
            return known[1]
        if probes:
            one = sa.select(sa.literal_column("1").label("one")).subquery()
            query = sa.select(
                *(NODES.c[name] for name in NodeRow._fields),
                *(probe.label(f"probe_{index}")
                  for index, probe in enumerate(probes))).select_from(
                one.outerjoin(NODES,
                              NODES.c.changed_at > sa.bindparam("after")))
        else:
            query = NODES_AFTER
        statement = DriverStatement(query, None if probes else _as_node)
        _scans[key] = (tuple(probes), statement)
        return statement


def scan_after(connection: sa.Connection, after: datetime.datetime,
               probes: Sequence[sa.ScalarSelect] = ()) -> Scan:
    """The rows stamped after ``after`` and the values of the scalar
    queries ``probes``, in one round trip."""
    rows = _scan_statement(probes).rows(connection, {"after": after})
    if not probes:
        return Scan(rows, ())
    return Scan([_as_node(row[:_FIELDS]) for row in rows
                 if row[0] is not None],
                tuple(rows[0][_FIELDS:]) if rows else (None,) * len(probes))


#: ``AllocationRow._make`` without its frame, as ``_as_node``.
_as_allocation = functools.partial(tuple.__new__, AllocationRow)
#: ``claims_on``'s statements, by the number of node ids they take.
_claims_statements: dict[int, DriverStatement] = {}


def claims_on(connection: sa.Connection,
              node_ids: Sequence[int]) -> list[AllocationRow]:
    """The allocation rows of ``node_ids`` (some, at most
    ``tables.IN_CHUNK``), on the driver's cursor: a statement for each
    power of two of ids, compiled once, the last id repeated up to it.
    Through ``Connection.execute``, an expanding ``IN`` rendered and
    compiled the statement at every call, and the result layer built
    its rows: a third of a refresh's CPU after other workers claimed on
    a few of its nodes (``tools/bench_other_claims.py``)."""
    if not node_ids:
        return []
    size = 1 << (len(node_ids) - 1).bit_length()
    statement = _claims_statements.get(size)
    if statement is None:
        # Two threads building one at once build the same.
        statement = _claims_statements[size] = DriverStatement(
            select(ALLOCATIONS, AllocationRow).where(
                ALLOCATIONS.c.compute_node_id.in_(
                    [sa.bindparam(f"node_{index}", type_=sa.Integer)
                     for index in range(size)])), _as_allocation)
    last = node_ids[-1]
    return statement.rows(connection, {
        f"node_{index}": node_ids[index] if index < len(node_ids) else last
        for index in range(size)})
