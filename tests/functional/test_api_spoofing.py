"""scheduler-api with the default http_basic strategy, attacked with the
identity headers an auth layer sets (X-Roles, X-User-Name,
OpenStack-System-Scope, ...): each one, and all at once, by a reader, a
user without permission and a caller without credentials, on SQLite,
PostgreSQL and MariaDB. Nothing changes; nothing is a 5xx."""

from tests.functional import api_server
from tests.unit.api.fakes import SPOOFED

#: caller -> the status every attempt must get.
CALLERS = {"reader": 403, "nobody": 403, None: 401}
GRANT = {"user": "reader", "role": "admin"}


def _attempts(api, headers: dict, caller: str | None) -> list[int]:
    policy = api.get("/v1/schedulingpolicies", user="admin").body[
        "schedulingpolicies"][0]["id"]
    return [
        api.get("/v1/permissions", user=caller, headers=headers).status,
        api.call("POST", "/v1/permissions", GRANT, user=caller,
                 headers=headers).status,
        api.call("PUT", "/v1/clusters/c1", {"scheduling_policy": {
            "id": policy}}, user=caller, headers=headers).status,
        api.call("DELETE", f"/v1/permissions/{_any_permission(api)}",
                 user=caller, headers=headers).status,
    ]


def _any_permission(api) -> str:
    return api.get("/v1/permissions").body["permissions"][0]["id"]


def _state(api) -> tuple:
    return (api.get("/v1/permissions").body,
            api.get("/v1/clusters").body)


def test_spoofed_identity_headers_change_nothing(
        tmp_path, write_config, start_console_script, db_url):
    api_server.sync(db_url)
    api_server.grant_matrix_permissions(db_url)
    api = api_server.start(tmp_path, write_config, start_console_script,
                           db_url)
    before = _state(api)
    header_sets = [{name: value} for name, value in SPOOFED]
    header_sets.append(dict(SPOOFED))
    seen: dict[str | None, set[int]] = {caller: set() for caller in CALLERS}
    for headers in header_sets:
        for caller in CALLERS:
            seen[caller].update(_attempts(api, headers, caller))
    assert seen == {caller: {status} for caller, status in CALLERS.items()}
    assert _state(api) == before
    # A reader is still a reader, and "nobody" still nobody.
    assert api.get("/v1/clusters", user="reader", headers={
        "X-Roles": "admin"}).status == 200
    assert api.get("/v1/clusters", user="nobody", headers={
        "X-Roles": "reader"}).status == 403
    stderr = api.process.stderr
    assert "Traceback" not in stderr
    assert "ignored identity headers the client sent" in stderr
