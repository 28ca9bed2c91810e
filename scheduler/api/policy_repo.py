"""Scheduling policies in the database and as the API shows them.

Stored policies are rows; config-file policies (the built-ins and
``[policy:NAME]``) are built from the configuration and shown locked.
Every write bumps the policy generation in the same transaction, which
is how running workers learn of it (``scheduler.policies.live``). The
statements are in ``scheduler.db.api_sql``.
"""

import json
import uuid
from collections.abc import Mapping

from oslo_config import cfg
from sqlalchemy.orm import Session

from scheduler import exception
from scheduler.api import errors
from scheduler.api import policy_body
from scheduler.db import api_sql
from scheduler.db import models
from scheduler.policies import cluster as cluster_policy
from scheduler.policies import units as policy_units


def etag(version: int | str) -> str:
    return f'"{version}"'


def check_if_match(if_match: str | None, current: str) -> None:
    """412 unless If-Match is absent, * or the current ETag."""
    if if_match is None:
        return
    tags = {t.strip() for t in if_match.split(",")}
    if "*" not in tags and current not in tags:
        raise errors.ApiError(412, f"If-Match: {if_match} is not the "
                              f"current ETag {current}; GET it again")


def clusters_of(conf: cfg.ConfigOpts, settings: Mapping[str, str | None],
                policy_id: str, config_name: str | None = None
                ) -> list[str]:
    """Clusters using the policy: set through the API, or mapped in the
    config file (config policies) and not overridden."""
    clusters = {c for c, p in settings.items() if p == policy_id}
    if config_name is not None:
        mapping = conf.scheduler.cluster_policies
        clusters |= {c for c, name in mapping.items()
                     if name == config_name and settings.get(c) is None}
    return sorted(clusters)


def _unit_ref(unit_type: str, name: str) -> dict:
    return {"unit": name,
            "unit_id": policy_units.unit_id(unit_type, name)}


def represent(policy_id: str, policy: cluster_policy.ClusterPolicy,
              description: str, normalization: str | None,
              positions: Mapping[str, str | None], locked: bool,
              clusters: list[str], version: int | str) -> dict:
    return {
        "id": policy_id, "name": policy.name, "description": description,
        "normalization": normalization,
        "properties": dict(policy.balancer_parameters),
        "filters": [{**_unit_ref(policy_units.FILTER, name),
                     "position": positions.get(name)}
                    for name in policy.filters],
        "weights": [{**_unit_ref(policy_units.WEIGHT, name),
                     "factor": factor} for name, factor in policy.weighers],
        "balance": (None if policy.balancer is None else
                    _unit_ref(policy_units.BALANCE, policy.balancer)),
        "locked": locked, "clusters": clusters, "version": version,
    }


# The configuration does not change under a running API: its policies
# are built once per ConfigOpts.
# Keyed by id, holding the ConfigOpts (which is unhashable) so that its
# id cannot be reused by another while the entry exists.
_CONFIG_BUILT: dict[int, tuple[cfg.ConfigOpts,
                               list[cluster_policy.ClusterPolicy]]] = {}


def _config_built(conf: cfg.ConfigOpts) -> list[cluster_policy.ClusterPolicy]:
    entry = _CONFIG_BUILT.get(id(conf))
    built = entry[1] if entry is not None else None
    if built is None:
        built = []
        for name in cluster_policy.config_policy_names(conf):
            try:
                built.append(cluster_policy.build_policy(
                    conf, name, cluster_policy.config_options(conf, name)))
            except exception.ConfigError:
                continue
        _CONFIG_BUILT[id(conf)] = (conf, built)
    return built


def config_policies(conf: cfg.ConfigOpts,
                    settings: Mapping[str, str | None]) -> list[dict]:
    """The config-file policies, locked; one that does not validate is
    left out (config check and start-up report it)."""
    shown = []
    for policy in _config_built(conf):
        name = policy.name
        policy_id = policy_units.config_policy_id(name)
        shown.append(represent(
            policy_id, policy, f"from the configuration ({name})",
            policy.normalization, {}, True,
            clusters_of(conf, settings, policy_id, name), 0))
    return shown


def draft_of(session: Session, row: models.SchedulingPolicy,
             units: list | None = None) -> policy_body.Draft:
    if units is None:
        units = api_sql.units_by_policy(session, [row.id]).get(row.id, [])
    return policy_body.Draft(
        name=row.name, description=row.description,
        normalization=row.normalization,
        properties=json.loads(row.properties),
        filters=[(u.unit_name, u.position) for u in units
                 if u.unit_type == policy_units.FILTER],
        weights=[(u.unit_name, u.factor or 0) for u in units
                 if u.unit_type == policy_units.WEIGHT],
        balance=row.balancer)


def represent_stored(conf: cfg.ConfigOpts, session: Session,
                     row: models.SchedulingPolicy,
                     settings: Mapping[str, str | None],
                     units: list | None = None) -> dict:
    draft = draft_of(session, row, units)
    # Built for its resolved order and defaults; a stored policy a
    # plugin removal broke is shown as stored.
    try:
        policy = policy_body.validate(conf, draft)
    except errors.ApiError:
        policy = cluster_policy.ClusterPolicy(
            draft.name, tuple(n for n, _ in draft.filters),
            tuple(draft.weights), draft.normalization or "", draft.balance,
            draft.properties)
    shown = represent(row.id, policy, row.description, row.normalization,
                      dict(draft.filters), False,
                      clusters_of(conf, settings, row.id), row.version)
    # What was stored, not the balancer's defaults: a PUT gives it back.
    shown["properties"] = draft.properties
    return shown


def name_taken(conf: cfg.ConfigOpts, session: Session, name: str,
               own_id: str | None = None) -> None:
    if name in cluster_policy.config_policy_names(conf):
        raise errors.conflict(f"name: {name!r} is a policy of the "
                              "configuration")
    other = api_sql.policy_id_named(session, name)
    if other is not None and other != own_id:
        raise errors.conflict(f"name: policy {other} is named {name!r}")


def write(session: Session, row: models.SchedulingPolicy,
          draft: policy_body.Draft) -> None:
    """Store ``draft`` into ``row`` (new or locked for update) and its
    units; bumps the generation."""
    row.name = draft.name
    row.description = draft.description
    row.normalization = draft.normalization
    row.balancer = draft.balance
    row.properties = json.dumps(draft.properties)
    row.updated_at = models.utcnow()
    session.add(row)
    session.flush()
    api_sql.delete_policy_units(session, row.id)
    ordinal = 0
    for name, position in draft.filters:
        session.add(models.SchedulingPolicyUnit(
            policy_id=row.id, unit_type=policy_units.FILTER,
            unit_name=name, position=position, ordinal=ordinal))
        ordinal += 1
    for name, factor in draft.weights:
        session.add(models.SchedulingPolicyUnit(
            policy_id=row.id, unit_type=policy_units.WEIGHT,
            unit_name=name, factor=factor, ordinal=ordinal))
        ordinal += 1
    session.flush()
    api_sql.bump_generation(session)


def new_row(created_by: str | None,
            created_by_domain: str = "") -> models.SchedulingPolicy:
    now = models.utcnow()
    return models.SchedulingPolicy(id=str(uuid.uuid4()), version=1,
                                   created_by=created_by,
                                   created_by_domain=created_by_domain,
                                   created_at=now, updated_at=now)


def bump_version(session: Session, row: models.SchedulingPolicy,
                 seen_version: int) -> None:
    """Compare-and-swap of the version: a concurrent writer that
    committed since our read makes this 412, never a lost edit."""
    if not api_sql.bump_policy_version(session, row.id, seen_version):
        raise errors.ApiError(412, "the policy changed meanwhile; GET it "
                              "again")
    row.version = seen_version + 1
