"""The engine's reads of what the REST API stores: the policy
generation, the scheduling policies with their units and the cluster
settings (``scheduler.policies.store`` turns them into a PolicySet)."""

import sqlalchemy as sa

from scheduler.db.tables import CLUSTER_SETTINGS
from scheduler.db.tables import POLICIES
from scheduler.db.tables import POLICY_GENERATION
from scheduler.db.tables import POLICY_UNITS

_GENERATION = sa.select(POLICY_GENERATION.c.generation).where(
    POLICY_GENERATION.c.id == 1)

#: The generation as a scalar subquery, for a statement to carry (the
#: host cache's scan): None before the first change.
GENERATION = _GENERATION.scalar_subquery()


def read_generation(connection: sa.Connection) -> int:
    """The generation the API bumps with every change (0 before the
    first)."""
    return connection.execute(_GENERATION).scalar() or 0


def stored_policies(connection: sa.Connection
                    ) -> list[tuple[dict, list[dict]]]:
    """Every stored policy row with its unit rows, by name."""
    rows = [dict(r._mapping) for r in connection.execute(
        sa.select(POLICIES).order_by(POLICIES.c.name))]
    units: dict[str, list[dict]] = {}
    for unit in connection.execute(sa.select(POLICY_UNITS)):
        units.setdefault(unit.policy_id, []).append(dict(unit._mapping))
    return [(row, units.get(row["id"], [])) for row in rows]


def cluster_settings(connection: sa.Connection) -> list[dict]:
    return [dict(r._mapping) for r in connection.execute(
        sa.select(CLUSTER_SETTINGS).order_by(CLUSTER_SETTINGS.c.cluster))]
