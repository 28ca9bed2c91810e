"""/v1/schedulingpolicies and its filters, weights and balances."""

import json

from oslo_config import cfg

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
from scheduler.db import policy_sql
from scheduler.policies import units as policy_units

SUB_TYPES = {"filters": policy_units.FILTER, "weights": policy_units.WEIGHT,
             "balances": policy_units.BALANCE}


def _units(ctx: Context) -> policy_body.Units:
    return policy_body.Units(api_sql.disabled_unit_ids(ctx.session))


def _all(ctx: Context) -> list[dict]:
    settings = api_sql.cluster_policy_ids(ctx.session)
    shown = repo.config_policies(ctx.conf, settings)
    rows = api_sql.policies_by_name(ctx.session)
    units = api_sql.units_by_policy(ctx.session)
    shown += [repo.represent_stored(ctx.conf, ctx.session, row, settings,
                                    units.get(row.id, []))
              for row in rows]
    return shown


def _one(ctx: Context, policy_id: str) -> dict:
    settings = api_sql.cluster_policy_ids(ctx.session)
    row = api_sql.policy(ctx.session, policy_id)
    if row is not None:
        return repo.represent_stored(ctx.conf, ctx.session, row, settings)
    for shown in repo.config_policies(ctx.conf, settings):
        if shown["id"] == policy_id:
            return shown
    raise errors.not_found("scheduling policy", policy_id)


def _etag(shown: dict) -> str:
    return repo.etag(shown["version"] if not shown["locked"]
                     else "locked-" + shown["id"])


# The list as of a policy generation, per configuration: every write
# that changes what it shows bumps the generation in its transaction, so
# a read of the one-row counter tells whether it is still current.
# Kept encoded: with 100 policies, encoding costs more than the rest.
# Keyed by id, holding the ConfigOpts so that its id is not reused.
_LISTS: dict[int, tuple[cfg.ConfigOpts, int, bytes]] = {}


def list_policies(ctx: Context) -> Reply:
    ctx.access.authorize(rules.READ)
    generation = policy_sql.read_generation(ctx.session.connection())
    cached = _LISTS.get(id(ctx.conf))
    if cached is None or cached[1] != generation:
        # Read after the counter: a write committed in between is shown,
        # under the older generation, and recomputed next time.
        body = json.dumps({"schedulingpolicies": _all(ctx)}).encode()
        cached = _LISTS[id(ctx.conf)] = (ctx.conf, generation, body)
    return Reply(cached[2])


def show_policy(ctx: Context, id: str) -> Reply:
    ctx.access.authorize(rules.READ)
    shown = _one(ctx, id)
    return Reply(shown, etag=_etag(shown))


def create_policy(ctx: Context) -> Reply:
    ctx.access.authorize(rules.POLICY_CREATE)
    data = body.read_json(ctx.request)
    start = None
    if "based_on" in data:
        # text(): a NUL or lone surrogate would fail the database query.
        base_id = body.text("based_on", data["based_on"])
        try:
            base = _one(ctx, base_id)
        except errors.ApiError:
            raise errors.bad_request("based_on", f"no scheduling policy "
                                     f"{base_id!r}") from None
        start = policy_body.parse(
            {k: base[k] for k in ("normalization", "properties", "filters",
                                  "weights", "balance")}
            | {"name": base["name"], "description": base["description"]},
            _units(ctx))
    draft = policy_body.parse(data, _units(ctx), current=start)
    policy_body.validate(ctx.conf, draft)
    repo.name_taken(ctx.conf, ctx.session, draft.name)
    row = repo.new_row(ctx.access.user, ctx.access.domain)
    repo.write(ctx.session, row, draft)
    shown = _one(ctx, row.id)
    return Reply(shown, status=201, etag=_etag(shown),
                 headers={"Location": f"/v1/schedulingpolicies/{row.id}"})


def manages_policy(ctx: Context, row: models.SchedulingPolicy,
                   clusters: list[str]) -> dict[str, str]:
    """The edit and delete rules' target for a stored policy attached
    to ``clusters``: cluster_admin of every one of them; attached to
    none, its creator or a cluster_admin of all."""
    manages = (ctx.access.manages(clusters) if clusters
               else (row.created_by, row.created_by_domain)
               == (ctx.access.user, ctx.access.domain)
               or access.ALL_CLUSTERS in ctx.access.clusters)
    return {"manages_policy": access.flag(manages)}


def _editable(ctx: Context, policy_id: str, rule: str
              ) -> tuple[models.SchedulingPolicy, dict]:
    """The stored policy locked for update, after the rule, If-Match and
    lock checks; 409 for a config-file policy."""
    row = api_sql.policy(ctx.session, policy_id, for_update=True)
    if row is None:
        shown = _one(ctx, policy_id)  # 404 unless a config policy
        ctx.access.authorize(rule, {"manages_policy": access.flag(
            bool(shown["clusters"])
            and ctx.access.manages(shown["clusters"]))})
        raise errors.conflict(f"scheduling policy {shown['name']} is "
                              "locked: it comes from the configuration; "
                              "POST a copy with based_on")
    shown = repo.represent_stored(ctx.conf, ctx.session, row,
                                  api_sql.cluster_policy_ids(ctx.session))
    ctx.access.authorize(rule, manages_policy(ctx, row, shown["clusters"]))
    repo.check_if_match(ctx.request.headers.get("If-Match"), _etag(shown))
    return row, shown


def _save(ctx: Context, row: models.SchedulingPolicy, shown: dict,
          draft: policy_body.Draft) -> dict:
    policy_body.validate(ctx.conf, draft)
    repo.name_taken(ctx.conf, ctx.session, draft.name, own_id=row.id)
    repo.bump_version(ctx.session, row, shown["version"])
    repo.write(ctx.session, row, draft)
    return _one(ctx, row.id)


def update_policy(ctx: Context, id: str) -> Reply:
    row, shown = _editable(ctx, id, rules.POLICY_EDIT)
    data = body.read_json(ctx.request)
    draft = policy_body.parse(data, _units(ctx),
                              current=repo.draft_of(ctx.session, row),
                              current_read_only=shown)
    shown = _save(ctx, row, shown, draft)
    return Reply(shown, etag=_etag(shown))


def delete_policy(ctx: Context, id: str) -> Reply:
    row, shown = _editable(ctx, id, rules.POLICY_DELETE)
    if shown["clusters"]:
        raise errors.conflict(f"scheduling policy {row.name} is used by "
                              f"clusters {', '.join(shown['clusters'])}")
    ctx.session.delete(row)
    api_sql.bump_generation(ctx.session)
    return Reply(status=204)


# Sub-collections: oVirt's filters, weights and balances of one policy.

def _entries(shown: dict, sub: str) -> list[dict]:
    if sub == "balances":
        return [shown["balance"]] if shown["balance"] else []
    return shown[sub]


def _entry(shown: dict, sub: str, unit_id: str) -> dict:
    for entry in _entries(shown, sub):
        if unit_id in (entry["unit_id"], entry["unit"]):
            return entry
    raise errors.not_found(f"{sub[:-1]} of policy {shown['name']}", unit_id)


def list_sub(ctx: Context, id: str, sub: str) -> Reply:
    ctx.access.authorize(rules.READ)
    return Reply({sub: _entries(_one(ctx, id), sub)})


def show_sub(ctx: Context, id: str, sub: str, unit_id: str) -> Reply:
    ctx.access.authorize(rules.READ)
    return Reply(_entry(_one(ctx, id), sub, unit_id))


def add_sub(ctx: Context, id: str, sub: str) -> Reply:
    row, shown = _editable(ctx, id, rules.POLICY_EDIT)
    data = body.read_json(ctx.request)
    units = _units(ctx)
    draft = repo.draft_of(ctx.session, row)
    if sub == "balances":
        if draft.balance is not None:
            raise errors.conflict(f"balance: policy {row.name} has the "
                                  f"balancer {draft.balance}; a policy has "
                                  "at most one: DELETE it first")
        draft.balance = policy_body.parse_balance(data, units)
    else:
        parsed = policy_body.parse({sub: [data]}, units, current=draft)
        new = getattr(parsed, sub)[-1]
        if any(name == new[0] for name, _ in getattr(draft, sub)):
            raise errors.conflict(f"{sub}: {new[0]} is in the policy "
                                  "already")
        getattr(draft, sub).append(new)
    shown = _save(ctx, row, shown, draft)
    return Reply(_entries(shown, sub)[-1], status=201, etag=_etag(shown))


def remove_sub(ctx: Context, id: str, sub: str, unit_id: str) -> Reply:
    row, shown = _editable(ctx, id, rules.POLICY_EDIT)
    name = _entry(shown, sub, unit_id)["unit"]
    draft = repo.draft_of(ctx.session, row)
    if sub == "balances":
        draft.balance = None
        draft.properties = {}
    else:
        setattr(draft, sub, [e for e in getattr(draft, sub) if e[0] != name])
    shown = _save(ctx, row, shown, draft)
    return Reply(status=204, etag=_etag(shown))


def _bind(handler, sub: str):
    def bound(ctx: Context, **kwargs) -> Reply:
        return handler(ctx, sub=sub, **kwargs)
    return bound


def register(router: Router) -> None:
    base = "/v1/schedulingpolicies"
    router.add(base, "GET", list_policies)
    router.add(base, "POST", create_policy)
    router.add(base + "/{id}", "GET", show_policy)
    router.add(base + "/{id}", "PUT", update_policy)
    router.add(base + "/{id}", "DELETE", delete_policy)
    for sub in SUB_TYPES:
        router.add(f"{base}/{{id}}/{sub}", "GET", _bind(list_sub, sub))
        router.add(f"{base}/{{id}}/{sub}", "POST", _bind(add_sub, sub))
        router.add(f"{base}/{{id}}/{sub}/{{unit_id}}", "GET",
                   _bind(show_sub, sub))
        router.add(f"{base}/{{id}}/{sub}/{{unit_id}}", "DELETE",
                   _bind(remove_sub, sub))
