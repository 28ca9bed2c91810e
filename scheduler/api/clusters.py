"""/v1/clusters: which scheduling policy, parameter overrides and
migration settings each cluster has. What the API sets wins over the
configuration file; fields a PUT leaves out keep their value."""

import json

from scheduler import exception
from scheduler.api import access
from scheduler.api import body
from scheduler.api import errors
from scheduler.api import policy_body
from scheduler.api import policy_repo as repo
from scheduler.api import rules
from scheduler.api.router import Context
from scheduler.api.router import Reply
from scheduler.api.router import Router
from scheduler.db import api_sql
from scheduler.db import models
from scheduler.policies import cluster as cluster_policy
from scheduler.policies import units as policy_units
from scheduler.policies.migration import policies as migration_policies

FIELDS = ("name", "scheduling_policy", "properties", "migration", "version")
BANDWIDTH_METHODS = ("auto", "hypervisor_default", "custom")
#: 10 Tbit/s: beyond any host link, and within the 32-bit Integer
#: column (bandwidth_custom) of every database.
MAX_BANDWIDTH_MBPS = 10_000_000


def names(ctx: Context) -> list[str]:
    return sorted(api_sql.clusters_in_database(ctx.session)
                  | set(ctx.conf.scheduler.cluster_policies))


def _policies(ctx: Context) -> dict[str, str]:
    """Policy id -> name, stored and configured."""
    names = {policy_units.config_policy_id(n): n
             for n in cluster_policy.config_policy_names(ctx.conf)}
    names.update(api_sql.policy_names(ctx.session))
    return names


def _show(ctx: Context, name: str) -> dict:
    row = api_sql.cluster_setting(ctx.session, name)
    policy_names = _policies(ctx)
    if row is not None and row.scheduling_policy_id is not None:
        policy_id = row.scheduling_policy_id
    else:
        configured = ctx.conf.scheduler.cluster_policies.get(
            name, ctx.conf.scheduler.default_policy)
        policy_id = (None if configured is None
                     else policy_units.config_policy_id(configured))
    movement = migration_policies.read_migration_policies(ctx.conf)
    migration_id = (row.migration_policy if row and row.migration_policy
                    else movement.cluster_policies.get(
                        name, movement.default_policy))
    # Unset through the API: what [migration] bandwidth gives.
    method: object = ctx.conf.migration.bandwidth
    custom = method if isinstance(method, int) else None
    if row is not None and row.bandwidth_method:
        method, custom = row.bandwidth_method, row.bandwidth_custom
    elif custom is not None:
        method = "custom"
    return {
        "name": name,
        "scheduling_policy": (None if policy_id is None else {
            "id": policy_id, "name": policy_names.get(policy_id)}),
        "properties": json.loads(row.properties) if row else {},
        "migration": {
            "policy": {"id": migration_id},
            "bandwidth": {"assignment_method": method,
                          "custom_value": custom}},
        "version": row.version if row else 0,
    }


def list_clusters(ctx: Context) -> Reply:
    ctx.access.authorize(rules.READ)
    return Reply({"clusters": [_show(ctx, n) for n in names(ctx)]})


def show_cluster(ctx: Context, name: str) -> Reply:
    ctx.access.authorize(rules.READ)
    if name not in names(ctx):
        raise errors.not_found("cluster", name)
    shown = _show(ctx, name)
    return Reply(shown, etag=repo.etag(shown["version"]))


def _policy_id(ctx: Context, value: object) -> str | None:
    if value is None:
        return None
    body.typed("scheduling_policy", value, dict)
    body.check_fields("scheduling_policy", value, ("id", "name"))
    policy_id = body.typed("scheduling_policy.id", value.get("id"), str)
    if policy_id in _policies(ctx):
        # Locked against a concurrent DELETE of the policy.
        api_sql.policy(ctx.session, policy_id, for_update=True)
        return policy_id
    raise errors.bad_request("scheduling_policy.id",
                             f"no scheduling policy {policy_id!r}")


def _check_properties(ctx: Context, policy_id: str | None,
                      overrides: dict) -> None:
    """Overrides validated with the policy they apply to."""
    if not overrides:
        return
    if policy_id is None:
        raise errors.bad_request("properties", "a cluster without a "
                                 "scheduling policy has no parameters")
    name = _policies(ctx)[policy_id]
    row = api_sql.policy(ctx.session, policy_id)
    options = (repo.draft_of(ctx.session, row).options() if row else
               cluster_policy.config_options(ctx.conf, name))
    options = dict(options)
    options["balancer_parameters"] = list(options.get(
        "balancer_parameters", [])) + [f"{k}:{v}"
                                       for k, v in overrides.items()]
    try:
        cluster_policy.build_policy(ctx.conf, name, options)
    except exception.ConfigError as e:
        raise errors.bad_request("properties",
                                 policy_body.problem_of(e)) from None


def _migration(ctx: Context, row: models.ClusterSetting,
               value: object) -> None:
    body.typed("migration", value, dict)
    body.check_fields("migration", value, ("policy", "bandwidth"))
    if "policy" in value:
        policy = value["policy"]
        if policy is None:
            row.migration_policy = None
        else:
            body.typed("migration.policy", policy, dict)
            body.check_fields("migration.policy", policy, ("id",))
            policy_id = body.typed("migration.policy.id", policy.get("id"),
                                   str)
            known = migration_policies.read_migration_policies(
                ctx.conf).policies
            if policy_id not in known:
                raise errors.bad_request(
                    "migration.policy.id", f"no migration policy "
                    f"{policy_id!r}; expected one of {', '.join(known)}")
            row.migration_policy = policy_id
    if "bandwidth" in value:
        bandwidth = body.typed("migration.bandwidth", value["bandwidth"],
                               dict)
        body.check_fields("migration.bandwidth", bandwidth,
                          ("assignment_method", "custom_value"))
        method = body.choice("migration.bandwidth.assignment_method",
                             bandwidth.get("assignment_method", "auto"),
                             BANDWIDTH_METHODS)
        custom = body.typed("migration.bandwidth.custom_value",
                            bandwidth.get("custom_value"), int, True)
        if method == "custom" and (custom is None or custom < 1):
            raise errors.bad_request("migration.bandwidth.custom_value",
                                     "custom needs a value in Mbps >= 1")
        if custom is not None and custom > MAX_BANDWIDTH_MBPS:
            raise errors.bad_request(
                "migration.bandwidth.custom_value",
                f"expected at most {MAX_BANDWIDTH_MBPS} Mbps (10 Tbit/s)")
        row.bandwidth_method = method
        row.bandwidth_custom = custom if method == "custom" else None


def attach_target(ctx: Context, name: str) -> dict[str, str]:
    """The attach rule's target: cluster_admin of cluster ``name``."""
    return {"manages_cluster": access.flag(ctx.access.manages([name]))}


def update_cluster(ctx: Context, name: str) -> Reply:
    if len(name) > 255:
        raise errors.bad_request("name", "longer than 255 characters")
    ctx.access.authorize(rules.CLUSTER_ATTACH, attach_target(ctx, name))
    data = body.read_json(ctx.request)
    body.check_fields("", data, FIELDS)
    row = api_sql.cluster_setting(ctx.session, name, for_update=True)
    seen = row.version if row else 0
    repo.check_if_match(ctx.request.headers.get("If-Match"), repo.etag(seen))
    for field in ("name", "version"):
        if field in data and data[field] != (name if field == "name"
                                             else seen):
            raise errors.bad_request(field, "read-only; leave it out or "
                                     "give back the value a GET gave")
    if row is None:
        row = models.ClusterSetting(cluster=name, properties="{}",
                                    version=0)
    if "scheduling_policy" in data:
        row.scheduling_policy_id = _policy_id(ctx, data["scheduling_policy"])
    if "properties" in data:
        props = body.typed("properties", data["properties"], dict)
        row.properties = json.dumps({
            k: body.typed(f"properties.{k}", v, int)
            for k, v in props.items()})
    _check_properties(ctx, row.scheduling_policy_id,
                      json.loads(row.properties))
    if "migration" in data:
        _migration(ctx, row, data["migration"])
    row.version = seen + 1
    row.updated_at = models.utcnow()
    ctx.session.add(row)
    ctx.session.flush()
    api_sql.bump_generation(ctx.session)
    shown = _show(ctx, name)
    return Reply(shown, etag=repo.etag(shown["version"]))


def register(router: Router) -> None:
    router.add("/v1/clusters", "GET", list_clusters)
    router.add("/v1/clusters/{name}", "GET", show_cluster)
    router.add("/v1/clusters/{name}", "PUT", update_cluster)
