"""Fakes shared by the tests: host states built without a database.

``make_host`` is the one way the unit tests build a ``HostState``: a
compute node named ``name`` (its node ``<name>.local``) with 8 vCPUs, 16 GiB
of RAM and 100 GB of disk, a heartbeat and metric reports ``age``
seconds before ``scheduler.db.models.utcnow()`` (which tests freeze to
their own ``NOW``); any ``HostState`` field may be given instead.
"""

import datetime

from scheduler.db import models
from scheduler.host_manager import HostState
from scheduler.host_manager import Metric


def make_host(name: str = "node-1", metrics: dict[str, float] | None = None,
              age: float = 0.0, **fields) -> HostState:
    """A HostState named ``name`` whose metrics (name -> value) were
    reported ``age`` seconds ago; ``fields`` override any default."""
    stamp = models.utcnow() - datetime.timedelta(seconds=age)
    values = {
        "node_id": 1, "uuid": f"uuid-{name}", "host": name,
        "nodename": f"{name}.local", "vcpus": 8, "memory_mb": 16384,
        "disk_gb": 100, "updated_at": stamp,
        "metrics": {key: Metric(float(value), stamp, "test")
                    for key, value in (metrics or {}).items()},
    }
    values.update(fields)
    return HostState(**values)
