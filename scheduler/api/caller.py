"""GET /v1/access: who the caller is and what the rules let them do,
so that the web console offers only those actions (the server refuses
the others anyway). Any role may ask; every answer is the rules'
(``scheduler.api.rules``, with policy.yaml's overrides) for the same
targets the write handlers pass them."""

from scheduler.api import clusters
from scheduler.api import policies
from scheduler.api import policy_repo as repo
from scheduler.api import rules
from scheduler.api.router import Context
from scheduler.api.router import Reply
from scheduler.api.router import Router
from scheduler.db import api_sql

#: Rules without a per-resource target, by the name the answer gives.
GLOBAL_RULES = {"create_policy": rules.POLICY_CREATE,
                "disable_units": rules.UNIT_DISABLE,
                "manage_permissions": rules.PERMISSIONS}


def show_access(ctx: Context) -> Reply:
    ctx.access.authorize(rules.READ)
    allowed = ctx.access.allowed
    settings = api_sql.cluster_policy_ids(ctx.session)
    editable, deletable = [], []
    for row in api_sql.policies_by_name(ctx.session):
        target = policies.manages_policy(
            ctx, row, repo.clusters_of(ctx.conf, settings, row.id))
        if allowed(rules.POLICY_EDIT, target):
            editable.append(row.id)
        if allowed(rules.POLICY_DELETE, target):
            deletable.append(row.id)
    return Reply({
        "user": ctx.access.user,
        "roles": sorted(ctx.access.roles),
        "clusters": sorted(ctx.access.clusters),
        "may": {name: allowed(rule) for name, rule in GLOBAL_RULES.items()},
        "edit_policies": editable,
        "delete_policies": deletable,
        "attach_clusters": [
            name for name in clusters.names(ctx)
            if allowed(rules.CLUSTER_ATTACH,
                       clusters.attach_target(ctx, name))],
    })


def register(router: Router) -> None:
    router.add("/v1/access", "GET", show_access)
