"""The REST API's statements: stored scheduling policies and their units,
cluster settings, disabled units and the policy generation.

They run in the API request's ORM session, which owns the transaction;
the API keeps the rules (validation, ETags, conflicts) and its unit of
work (adding, deleting and flushing the rows it holds). The engine reads
the same tables through ``policy_sql``.
"""

import sqlalchemy as sa
from sqlalchemy.orm import Session

from scheduler.db import models

_POLICY = models.SchedulingPolicy
_UNIT = models.SchedulingPolicyUnit
_SETTING = models.ClusterSetting


def bump_generation(session: Session) -> None:
    """Every write of the API does this in its transaction: it is how
    running workers learn of the change (``scheduler.policies.live``)."""
    gen = models.PolicyGeneration
    session.execute(sa.update(gen).where(gen.id == 1).values(
        generation=gen.generation + 1))


def clusters_in_database(session: Session) -> set[str]:
    """The clusters compute nodes name, and those with settings."""
    nodes = session.scalars(sa.select(
        models.ComputeNode.cluster).distinct()).all()
    settings = session.scalars(sa.select(_SETTING.cluster)).all()
    return {n for n in nodes if n} | set(settings)


def cluster_setting(session: Session, cluster: str,
                    for_update: bool = False) -> models.ClusterSetting | None:
    if not for_update:
        # The session's own row when it holds one: a PUT shows what it
        # has just flushed.
        return session.get(_SETTING, cluster)
    return session.scalars(sa.select(_SETTING).where(
        _SETTING.cluster == cluster).with_for_update()).first()


def cluster_policy_ids(session: Session) -> dict[str, str | None]:
    """Cluster -> policy id set through the API."""
    return dict(session.execute(sa.select(
        _SETTING.cluster, _SETTING.scheduling_policy_id)).all())


def disabled_unit_ids(session: Session) -> set[str]:
    return set(session.scalars(sa.select(
        models.DisabledPolicyUnit.unit_id)).all())


def policy_names(session: Session) -> dict[str, str]:
    """Stored policy id -> name."""
    return dict(session.execute(sa.select(_POLICY.id, _POLICY.name)).all())


def policies_by_name(session: Session) -> list[models.SchedulingPolicy]:
    return list(session.scalars(sa.select(_POLICY).order_by(_POLICY.name)))


def policy(session: Session, policy_id: str,
           for_update: bool = False) -> models.SchedulingPolicy | None:
    query = sa.select(_POLICY).where(_POLICY.id == policy_id)
    if for_update:
        query = query.with_for_update()
    return session.scalars(query).first()


def policy_id_named(session: Session, name: str) -> str | None:
    return session.scalars(sa.select(_POLICY.id).where(
        _POLICY.name == name)).first()


def units_by_policy(session: Session, ids: list[str] | None = None
                    ) -> dict[str, list[models.SchedulingPolicyUnit]]:
    """Unit rows of the policies ``ids`` (all: None), in one query."""
    query = sa.select(_UNIT).order_by(_UNIT.ordinal)
    if ids is not None:
        query = query.where(_UNIT.policy_id.in_(ids))
    found: dict[str, list[models.SchedulingPolicyUnit]] = {}
    for unit in session.scalars(query):
        found.setdefault(unit.policy_id, []).append(unit)
    return found


def delete_policy_units(session: Session, policy_id: str) -> None:
    session.execute(sa.delete(_UNIT).where(_UNIT.policy_id == policy_id))


def bump_policy_version(session: Session, policy_id: str,
                        seen_version: int) -> bool:
    """Compare-and-swap of the version: False when a concurrent writer
    committed since ``seen_version`` was read."""
    result = session.execute(
        sa.update(_POLICY).where(
            _POLICY.id == policy_id,
            _POLICY.version == seen_version).values(
            version=seen_version + 1).execution_options(
            synchronize_session=False))
    return result.rowcount == 1
