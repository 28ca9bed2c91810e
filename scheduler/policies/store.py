"""Scheduling policies and cluster settings stored by the REST API, as
the engine uses them.

The API writes ``scheduling_policies`` (with their units) and
``cluster_settings`` and bumps ``policy_generation`` in the same
transaction. A worker reads the generation with each host refresh
(``scheduler.policies.live``) and, only when it moved, reads the rest
(the reads are in ``scheduler.db.policy_sql``) and rebuilds its
PolicySet with ``live_policy_set``: stored policies are validated by
``cluster_policy.build_policy``, as config-file ones are.
"""

import json
import logging
from collections.abc import Mapping
from collections.abc import Sequence

import sqlalchemy as sa
from oslo_config import cfg

from scheduler import exception
from scheduler.db import api as db_api
from scheduler.db import policy_sql
from scheduler.policies import cluster as cluster_policy
from scheduler.policies import units as policy_units

LOG = logging.getLogger(__name__)


def options_of(policy: Mapping, units: Sequence[Mapping]
               ) -> dict[str, object]:
    """A stored policy (row and unit rows) as [policy:NAME] options."""
    ordered = sorted(units, key=lambda u: u["ordinal"])
    options: dict[str, object] = {
        "filters": [u["unit_name"] + (f":{u['position']}"
                                      if u["position"] else "")
                    for u in ordered
                    if u["unit_type"] == policy_units.FILTER],
        "weighers": [f"{u['unit_name']}:{u['factor']}" for u in ordered
                     if u["unit_type"] == policy_units.WEIGHT],
        "balancer": policy["balancer"] or cluster_policy.NO_BALANCER,
        "balancer_parameters": [
            f"{k}:{v}" for k, v in json.loads(policy["properties"]).items()],
    }
    if policy["normalization"] is not None:
        options["normalization"] = policy["normalization"]
    return options


def _with_overrides(conf: cfg.ConfigOpts, policy: cluster_policy.ClusterPolicy,
                    options: Mapping[str, object], cluster: str,
                    overrides: Mapping[str, object]
                    ) -> cluster_policy.ClusterPolicy:
    """The cluster's own copy of ``policy`` with its parameter overrides,
    named ``policy@cluster`` so that logs and metrics tell them apart."""
    merged = dict(options)
    merged["balancer_parameters"] = list(
        merged.get("balancer_parameters", [])) + [
        f"{k}:{v}" for k, v in overrides.items()]
    return cluster_policy.build_policy(conf, f"{policy.name}@{cluster}",
                                       merged, policy.version)


# 61 lines: the merge reads as one piece (policies, then assignments,
# then migration policies and bandwidths, each from its own table).
def live_policy_set(conf: cfg.ConfigOpts, base: cluster_policy.PolicySet,
                    connection: sa.Connection) -> cluster_policy.PolicySet:
    """``base`` (the config files') with the stored policies added and
    the stored cluster assignments winning over ``cluster_policies``.

    A stored policy that no longer validates (a plugin it names was
    uninstalled) is skipped with an ERROR; its clusters keep the config
    file's policy.
    """
    policies = dict(base.policies)
    options_by_id = _stored_policies(conf, connection, policies)
    for name in cluster_policy.config_policy_names(conf):
        options_by_id.setdefault(policy_units.config_policy_id(name),
                                 (name, {}))
    mapping = dict(base.cluster_policies)
    movement = {}
    bandwidths: dict[str, str | int] = {}
    for setting in policy_sql.cluster_settings(connection):
        if setting["migration_policy"]:
            movement[setting["cluster"]] = setting["migration_policy"]
        bandwidth = bandwidth_setting(setting)
        if bandwidth is not None:
            bandwidths[setting["cluster"]] = bandwidth
        found = options_by_id.get(setting["scheduling_policy_id"] or "")
        if found is None:
            continue
        name = _cluster_policy(conf, policies, setting, *found)
        if name is not None:
            mapping[setting["cluster"]] = name
    return cluster_policy.PolicySet(policies, mapping, base.default_policy,
                                    movement, bandwidths)


def _stored_policies(conf: cfg.ConfigOpts, connection: sa.Connection,
                     policies: dict) -> dict[str, tuple[str, dict]]:
    """Builds each stored policy into ``policies``; their options by
    policy id."""
    options_by_id: dict[str, tuple[str, dict]] = {}
    for row, units in policy_sql.stored_policies(connection):
        options = options_of(row, units)
        try:
            policies[row["name"]] = cluster_policy.build_policy(
                conf, row["name"], options, row["version"])
        except exception.ConfigError as e:
            LOG.error("Stored scheduling policy %s is unusable, its "
                      "clusters keep their configured policy: %s",
                      row["name"], e)
            continue
        options_by_id[row["id"]] = (row["name"], options)
    return options_by_id


def bandwidth_setting(setting: Mapping) -> str | int | None:
    """A cluster's migration bandwidth setting, None for none."""
    method = setting["bandwidth_method"]
    if method == "custom" and setting["bandwidth_custom"]:
        return setting["bandwidth_custom"]
    if method in ("auto", "hypervisor_default"):
        return method
    return None


def _cluster_policy(conf: cfg.ConfigOpts, policies: dict, setting: Mapping,
                    name: str, options: dict) -> str | None:
    """The name of the policy a cluster setting gives its cluster (its
    own copy when the setting overrides properties), added to
    ``policies``; None, logged, when it is unusable."""
    try:
        if name not in policies:
            options = cluster_policy.config_options(conf, name)
            policies[name] = cluster_policy.build_policy(conf, name, options)
        elif not options:
            options = cluster_policy.config_options(conf, name)
        overrides = json.loads(setting["properties"] or "{}")
        if overrides:
            own = _with_overrides(conf, policies[name], options,
                                  setting["cluster"], overrides)
            policies[own.name] = own
            name = own.name
    except exception.ConfigError as e:
        LOG.error("Policy %s of cluster %s is unusable, the cluster "
                  "keeps its configured policy: %s", name,
                  setting["cluster"], e)
        return None
    return name


def current_policy_set(conf: cfg.ConfigOpts) -> cluster_policy.PolicySet:
    """The configured policies with the stored ones, as a worker has them
    now (one-shot commands: explain, balance)."""
    base = cluster_policy.load_policies(conf)
    with db_api.get_engine(conf).connect() as connection:
        return live_policy_set(conf, base, connection)
