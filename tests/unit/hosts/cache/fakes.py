"""Helpers shared by the host cache tests: nodes and claims written to a
database the cache reads."""

import datetime
import json
import uuid

from scheduler.db import models
from scheduler.hosts import state as hs

NODES = models.ComputeNode.__table__


ALLOCATIONS = models.Allocation.__table__


SECOND = datetime.timedelta(seconds=1)


def iso(moment: datetime.datetime) -> str:
    return moment.isoformat(timespec="microseconds") + "Z"


def metrics_json(moment: datetime.datetime, **values) -> str:
    """A metrics column as the agent writes it."""
    return json.dumps([{"name": name.replace("_", "."), "value": value,
                        "timestamp": iso(moment), "source": "test"}
                       for name, value in values.items()])


def add_node(engine, host: str, *, when: datetime.datetime | None = None,
             metrics: str | None = None, **values) -> int:
    when = when or models.utcnow()
    row = {
        "uuid": str(uuid.uuid4()), "host": host,
        "hypervisor_hostname": f"{host}.example.org", "cluster": "c1",
        "availability_zone": "nova", "vcpus": 8, "memory_mb": 16384,
        "local_gb": 100, "memory_mb_used": 2048, "local_gb_used": 10,
        "cpu_info": json.dumps({"arch": "x86_64"}),
        "networks": json.dumps(["physnet1"]),
        "metrics": metrics if metrics is not None else metrics_json(
            when, cpu_percent=10.0, memory_free=8 * 1024 ** 3),
        "metrics_updated_at": when, "disabled": False, "generation": 0,
        "changed_at": when, "created_at": when, "updated_at": when,
    }
    row.update(values)
    with engine.begin() as connection:
        return connection.execute(NODES.insert().values(**row)
                                  ).inserted_primary_key[0]


def update_node(engine, node_id: int, **values) -> None:
    values.setdefault("changed_at", models.utcnow())
    with engine.begin() as connection:
        connection.execute(NODES.update().where(NODES.c.id == node_id)
                           .values(**values))


def claim(engine, node_id: int, *, vcpus=1, memory_mb=512, disk_gb=10,
          group=None, when: datetime.datetime | None = None,
          bump: bool = True) -> str:
    """An allocation written the way claims are: with a key bump."""
    when = when or models.utcnow()
    instance = str(uuid.uuid4())
    with engine.begin() as connection:
        connection.execute(ALLOCATIONS.insert().values(
            uuid=str(uuid.uuid4()), instance_uuid=instance,
            compute_node_id=node_id, vcpus=vcpus, memory_mb=memory_mb,
            disk_gb=disk_gb, instance_group=group, created_at=when))
        if bump:
            connection.execute(NODES.update().where(NODES.c.id == node_id)
                               .values(generation=NODES.c.generation + 1,
                                       changed_at=when))
    return instance


def by_host(states) -> dict[str, hs.HostState]:
    return {state.host: state for state in states}


def held_claims(manager, node: int) -> list[tuple]:
    """The claims the cache holds for ``node`` (``claims_on``)."""
    return [(claim.instance_uuid, claim.vcpus, claim.memory_mb,
             claim.disk_gb, claim.instance_group)
            for claim in manager.claims_on([node])[node]]


def report(engine, node_id: int, when: datetime.datetime,
           **values) -> None:
    """A metrics report written the way the agent writes one."""
    update_node(engine, node_id, metrics=metrics_json(when, **values),
                metrics_updated_at=when, updated_at=when, changed_at=when,
                generation=NODES.c.generation + 1)
