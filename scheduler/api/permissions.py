"""/v1/permissions: who has which role on which cluster (admin only).
Every change is logged with who made it."""

import logging

from scheduler.api import body
from scheduler.api import errors
from scheduler.api import rules
from scheduler.api.router import Context
from scheduler.api.router import Reply
from scheduler.api.router import Router
from scheduler.common.abridge import short
from scheduler.db import permissions as store

LOG = logging.getLogger(__name__)


def list_permissions(ctx: Context) -> Reply:
    ctx.access.authorize(rules.PERMISSIONS)
    return Reply({"permissions": [store.as_dict(row)
                                  for row in store.list_all(ctx.session)]})


def add_permission(ctx: Context) -> Reply:
    ctx.access.authorize(rules.PERMISSIONS)
    data = body.read_json(ctx.request)
    body.check_fields("", data, ("id", "user", "domain", "role", "cluster"))
    if "id" in data:
        raise errors.bad_request("id", "read-only; the server assigns it")
    try:
        row = store.add(ctx.session, data.get("user"), data.get("role"),
                        data.get("cluster", store.ALL_CLUSTERS),
                        data.get("domain"))
    except store.InvalidPermission as e:
        raise errors.bad_request(e.field, e.problem) from None
    except LookupError as e:
        raise errors.conflict(f"the permission exists already: {e}") from None
    LOG.info("%s granted permission %s: %s", short(ctx.access.user), row.id,
             short(store.as_dict(row)))
    return Reply(store.as_dict(row), status=201,
                 headers={"Location": f"/v1/permissions/{row.id}"})


def remove_permission(ctx: Context, id: str) -> Reply:
    ctx.access.authorize(rules.PERMISSIONS)
    if not store.remove(ctx.session, id):
        raise errors.not_found("permission", id)
    LOG.info("%s removed permission %s", short(ctx.access.user), id)
    return Reply(status=204)


def register(router: Router) -> None:
    router.add("/v1/permissions", "GET", list_permissions)
    router.add("/v1/permissions", "POST", add_permission)
    router.add("/v1/permissions/{id}", "DELETE", remove_permission)
