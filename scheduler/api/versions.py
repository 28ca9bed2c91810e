"""``GET /`` (the versions), /v1/migrationpolicies (read-only, as
oVirt's) and /v1/openapi.json."""

import dataclasses

from scheduler.api import errors
from scheduler.api import openapi
from scheduler.api import rules
from scheduler.api.router import Context
from scheduler.api.router import Reply
from scheduler.api.router import Router
from scheduler.policies.migration import policies as migration_policies

VERSION = {"id": "v1", "status": "CURRENT",
           "links": [{"rel": "self", "href": "/v1"}]}


def versions(ctx: Context) -> Reply:
    return Reply({"versions": [VERSION]})


def version(ctx: Context) -> Reply:
    return Reply({"version": VERSION})


def openapi_document(ctx: Context) -> Reply:
    return Reply(openapi.document())


def _show(policy: migration_policies.MigrationPolicy) -> dict:
    shown = dataclasses.asdict(policy)
    shown["builtin"] = policy.id in migration_policies.BUILTIN_POLICIES
    return shown


def list_migration_policies(ctx: Context) -> Reply:
    ctx.access.authorize(rules.READ)
    known = migration_policies.read_migration_policies(ctx.conf).policies
    return Reply({"migrationpolicies": [_show(p) for p in known.values()]})


def show_migration_policy(ctx: Context, id: str) -> Reply:
    ctx.access.authorize(rules.READ)
    known = migration_policies.read_migration_policies(ctx.conf).policies
    if id not in known:
        raise errors.not_found("migration policy", id)
    return Reply(_show(known[id]))


def register(router: Router) -> None:
    router.add("/", "GET", versions)
    router.add("/v1", "GET", version)
    router.add("/v1/openapi.json", "GET", openapi_document)
    router.add("/v1/migrationpolicies", "GET", list_migration_policies)
    router.add("/v1/migrationpolicies/{id}", "GET", show_migration_policy)
