"""Helpers shared by the claims tests: nodes, claims and their allocations."""

import uuid

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler import claims
from scheduler.db import models

NODES = models.ComputeNode.__table__


ALLOCATIONS = models.Allocation.__table__


ONE = claims.Usage(vcpus=1, memory_mb=512, disk_gb=1)


def add_node(engine, host: str, **values) -> int:
    now = models.utcnow()
    row = {"uuid": str(uuid.uuid4()), "host": host,
           "hypervisor_hostname": f"{host}.example.org", "cluster": "c1",
           "availability_zone": "nova", "vcpus": 4, "memory_mb": 8192,
           "local_gb": 100, "cpu_allocation_ratio": 1.0,
           "ram_allocation_ratio": 1.0, "disk_allocation_ratio": 1.0,
           "metrics_updated_at": now, "changed_at": now, "updated_at": now}
    row.update(values)
    with engine.begin() as connection:
        return connection.execute(
            NODES.insert().values(**row)).inserted_primary_key[0]


def allocations(engine) -> list:
    with engine.connect() as connection:
        return connection.execute(sa.select(ALLOCATIONS)).all()


def new_uuid() -> str:
    return str(uuid.uuid4())


class FailingReleases:
    """A store whose releases fail ``failures[allocation_id]`` times."""

    def __init__(self, failures: dict[str, int]):
        self.failures = dict(failures)

    def release_allocation(self, allocation_id, made_before=None):
        if self.failures.get(allocation_id, 0) > 0:
            self.failures[allocation_id] -= 1
            raise sa_exc.OperationalError("DELETE", {}, Exception("away"))
        return True
