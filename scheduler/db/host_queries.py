"""The host cache's reads of the database: the row shapes it reads and
the statements it runs, built once (building one costs more than running
it on a small result)."""

import datetime
from collections.abc import Callable
from typing import NamedTuple

import sqlalchemy as sa

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
ALLOCATIONS_BY_NODE = select(ALLOCATIONS, AllocationRow).where(
    ALLOCATIONS.c.compute_node_id.in_(sa.bindparam("ids", expanding=True)))
WINDOW_PROBE = sa.select(
    sa.func.count(),
    sa.func.coalesce(sa.func.sum(NODES.c.generation), 0)).where(
    NODES.c.changed_at >= sa.bindparam("since"),
    NODES.c.changed_at <= sa.bindparam("until"))

