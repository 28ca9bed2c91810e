"""The SQL of a node's agent: its ``compute_nodes`` row registered,
reported to and read back."""

import datetime
import json
import uuid

import sqlalchemy as sa

from scheduler.db.tables import NODES


def register_node(connection: sa.Connection, values: dict,
                  now: datetime.datetime) -> tuple[int, bool]:
    """Create the row of the node ``values`` describes (found by host and
    hypervisor hostname) or update it with ``values``; returns its id and
    whether it was created."""
    key = sa.and_(NODES.c.host == values["host"],
                  NODES.c.hypervisor_hostname
                  == values["hypervisor_hostname"])
    node_id = connection.execute(sa.select(NODES.c.id).where(key)).scalar()
    if node_id is None:
        node_id = connection.execute(NODES.insert().values(
            uuid=str(uuid.uuid4()), metrics="[]", disabled=False,
            generation=0, memory_mb_used=0, local_gb_used=0,
            created_at=now, updated_at=now, changed_at=now,
            **values)
        ).inserted_primary_key[0]
        return node_id, True
    connection.execute(NODES.update().where(
        NODES.c.id == node_id).values(
            updated_at=now, changed_at=now,
            generation=NODES.c.generation + 1, **values))
    return node_id, False


def write_report(connection: sa.Connection, node_id: int,
                 metrics: list[dict], usage: dict,
                 now: datetime.datetime) -> bool:
    """Store a node's metrics and measured usage, reported at ``now``;
    False if its row is gone. The instance entries go to a column of
    their own (``instance_metrics``: NULL when there are none), so that
    the schedulers' refreshes read the host's own metrics alone."""
    own = [entry for entry in metrics if "instance" not in entry]
    instances = [entry for entry in metrics if "instance" in entry]
    return bool(connection.execute(
        NODES.update().where(NODES.c.id == node_id).values(
            metrics=json.dumps(own),
            instance_metrics=json.dumps(instances) if instances else None,
            metrics_updated_at=now,
            updated_at=now, changed_at=now,
            # Every writer bumps it: how the schedulers' caches notice a
            # change committed late (host_cache).
            generation=NODES.c.generation + 1,
            **usage)).rowcount)


def node_row(connection: sa.Connection, node_id: int) -> dict:
    """A node's row as stored, JSON columns decoded; ``metrics`` is the
    list the monitors reported: the host's metrics, then the instance
    entries stored apart."""
    row = connection.execute(sa.select(NODES).where(
        NODES.c.id == node_id)).mappings().one()
    result = dict(row)
    for column in ("cpu_info", "networks", "metrics"):
        result[column] = json.loads(result[column])
    instances = result.pop("instance_metrics")
    if instances is not None:
        result["metrics"] += json.loads(instances)
    return result
