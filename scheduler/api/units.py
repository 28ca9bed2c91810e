"""/v1/schedulingpolicyunits: every installed filter, weigher and
balancer; DELETE disables a third-party one."""

from scheduler.api import errors
from scheduler.api import policy_repo as repo
from scheduler.api import rules
from scheduler.api.router import Context
from scheduler.api.router import Reply
from scheduler.api.router import Router
from scheduler.db import api_sql
from scheduler.db import models
from scheduler.policies import units as policy_units


def _show(unit: policy_units.PolicyUnit, disabled: set[str]) -> dict:
    return {"id": unit.id, "name": unit.name, "type": unit.type,
            "description": unit.description, "internal": unit.internal,
            "enabled": unit.id not in disabled,
            "properties": list(unit.properties)}


def _find(unit_id: str) -> policy_units.PolicyUnit:
    for unit in policy_units.installed_units():
        if unit_id in (unit.id, unit.name):
            return unit
    raise errors.not_found("scheduling policy unit", unit_id)


def list_units(ctx: Context) -> Reply:
    ctx.access.authorize(rules.READ)
    disabled = api_sql.disabled_unit_ids(ctx.session)
    return Reply({"schedulingpolicyunits": [
        _show(unit, disabled) for unit in policy_units.installed_units()]})


def show_unit(ctx: Context, id: str) -> Reply:
    ctx.access.authorize(rules.READ)
    return Reply(_show(_find(id), api_sql.disabled_unit_ids(ctx.session)))


def _users(ctx: Context, unit: policy_units.PolicyUnit) -> list[str]:
    """Names of the policies, stored or configured, using the unit."""
    settings = api_sql.cluster_policy_ids(ctx.session)
    names = []
    for shown in repo.config_policies(ctx.conf, settings):
        names += [shown["name"]] if _uses(shown, unit) else []
    for row in api_sql.policies_by_name(ctx.session):
        if _uses(repo.represent_stored(ctx.conf, ctx.session, row,
                                       settings), unit):
            names.append(row.name)
    return names


def _uses(shown: dict, unit: policy_units.PolicyUnit) -> bool:
    entries = shown["filters"] + shown["weights"] + (
        [shown["balance"]] if shown["balance"] else [])
    return any(entry["unit_id"] == unit.id for entry in entries)


def disable_unit(ctx: Context, id: str) -> Reply:
    ctx.access.authorize(rules.UNIT_DISABLE)
    unit = _find(id)
    if unit.internal:
        raise errors.conflict(f"unit {unit.name} is internal (part of "
                              "metrics-scheduler) and cannot be disabled")
    users = _users(ctx, unit)
    if users:
        raise errors.conflict(f"unit {unit.name} is used by the policies "
                              f"{', '.join(users)}")
    if unit.id not in api_sql.disabled_unit_ids(ctx.session):
        ctx.session.add(models.DisabledPolicyUnit(
            unit_id=unit.id, unit_type=unit.type, unit_name=unit.name,
            disabled_at=models.utcnow()))
        api_sql.bump_generation(ctx.session)
    return Reply(status=204)


def register(router: Router) -> None:
    router.add("/v1/schedulingpolicyunits", "GET", list_units)
    router.add("/v1/schedulingpolicyunits/{id}", "GET", show_unit)
    router.add("/v1/schedulingpolicyunits/{id}", "DELETE", disable_unit)


