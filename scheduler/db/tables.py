"""The tables as the scheduler's SQL statements name them, and how many
values go in one IN list.

Every statement is written against SQLAlchemy Core tables rather than
the ORM classes of ``scheduler.db.models``: the engine reads and writes
tens of thousands of rows, and ORM objects cost several times more than
plain rows. The statements themselves live next to each other, in this
package: ``host_queries`` (what a host cache refresh reads), ``claim_sql``
(claims and the write transaction), and the other ``*_sql`` modules
(migrations, utilisation samples, stored policies, a node agent's row,
the REST API's ORM statements).
"""

from collections.abc import Iterator
from collections.abc import Sequence
from typing import TypeVar

from scheduler.db import models

NODES = models.ComputeNode.__table__
ALLOCATIONS = models.Allocation.__table__
MIGRATIONS = models.Migration.__table__
SAMPLES = models.UtilizationSample.__table__
POLICIES = models.SchedulingPolicy.__table__
POLICY_UNITS = models.SchedulingPolicyUnit.__table__
CLUSTER_SETTINGS = models.ClusterSetting.__table__
POLICY_GENERATION = models.PolicyGeneration.__table__

# Values per IN list: far below the bound-parameter limit of every backend
# (SQLite before 3.32 allowed 999), and one statement in the usual case.
IN_CHUNK = 500

_Value = TypeVar("_Value")


def chunks(values: Sequence[_Value]) -> Iterator[Sequence[_Value]]:
    """``values`` in consecutive slices of at most ``IN_CHUNK``."""
    for start in range(0, len(values), IN_CHUNK):
        yield values[start:start + IN_CHUNK]
