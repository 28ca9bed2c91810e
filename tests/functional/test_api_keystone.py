"""scheduler-api with auth_strategy keystone against one real Keystone
(started once: its setup is most of these tests' time). As meant: a
system-scoped admin is an admin, a project member a reader, a caller
without a valid token is refused. Attacked: spoofed identity headers
beside a valid token, a project's admin claiming the system scope, a
same-named user of another domain, a revoked token, garbage tokens, a
catalog without the endpoint."""

import time
import uuid

import pytest

from tests.functional import api_server
from tests.functional import keystone_server
from tests.unit.api.fakes import SPOOFED

#: The revocation bound of these tests ([keystone_authtoken]
#: token_cache_time); the default is 30 s (docs/api.md, Security).
CACHE_SECONDS = 2
POLICY = {"name": "by-keystone-admin",
          "weights": [{"unit": "RAMWeigher", "factor": -1}]}


@pytest.fixture(scope="module")
def keystone(tmp_path_factory):
    server = keystone_server.Keystone(tmp_path_factory.mktemp("keystone"))
    yield server
    server.stop()


def start(keystone, tmp_path, write_config, start_console_script, url,
          **authtoken):
    api_server.sync(url)
    section = dict(keystone_server.authtoken_section(keystone),
                   token_cache_time=CACHE_SECONDS, **authtoken)
    return api_server.start(tmp_path, write_config, start_console_script,
                            url, strategy="keystone",
                            extra={"keystone_authtoken": section})


def unique(name: str) -> str:
    """Keystone is shared by the module's tests: names of their own."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


def token(value: str) -> dict:
    return {"X-Auth-Token": value}


def permissions(api, admin: str) -> list[dict]:
    reply = api.get("/v1/permissions", user=None, headers=token(admin))
    assert reply.status == 200, reply.body
    return reply.body["permissions"]


def no_server_errors(api) -> None:
    stderr = api.process.stderr
    assert "Traceback" not in stderr, stderr[-3000:]


def test_keystone_tokens(keystone, tmp_path, write_config,
                         start_console_script, sqlite_url):
    api_server.sync(sqlite_url)
    api = api_server.start(
        tmp_path, write_config, start_console_script, sqlite_url,
        strategy="keystone",
        extra={"keystone_authtoken": keystone_server.authtoken_section(
            keystone)})
    admin = {"X-Auth-Token": keystone.admin_token()}
    carol = unique("carol")
    member = {"X-Auth-Token": keystone.project_member(carol, "pw")}

    created = api.call("POST", "/v1/schedulingpolicies", POLICY,
                       user=None, headers=admin)
    assert created.status == 201, created.body
    assert api.get("/v1/permissions", user=None,
                   headers=admin).status == 200
    # Keystone's member role reads; it may not change anything.
    listed = api.get("/v1/schedulingpolicies", user=None, headers=member)
    assert listed.status == 200
    assert "by-keystone-admin" in {
        p["name"] for p in listed.body["schedulingpolicies"]}
    denied = api.call("PUT", "/v1/clusters/c1", {"scheduling_policy": {
        "id": created.body["id"]}}, user=None, headers=member)
    assert denied.status == 403, denied.body
    # A permission given to the member's user name counts too.
    granted = api.call("POST", "/v1/permissions", {
        "user": carol, "role": "cluster_admin", "cluster": "c1"},
        user=None, headers=admin)
    assert granted.status == 201
    assert api.call("PUT", "/v1/clusters/c1", {"scheduling_policy": {
        "id": created.body["id"]}}, user=None,
        headers=member).status == 200
    assert api.get("/v1/schedulingpolicies", user=None).status == 401
    assert api.get("/v1/schedulingpolicies", user=None, headers={
        "X-Auth-Token": "not-a-token"}).status == 401


def test_spoofed_headers_beside_valid_tokens(keystone, tmp_path,
                                              write_config,
                                              start_console_script, db_url):
    api = start(keystone, tmp_path, write_config, start_console_script,
                db_url)
    admin = keystone.admin_token()
    member = keystone.project_member(unique("mallory"), "pw")
    project_admin = keystone.project_member(unique("eve"), "pw",
                                            role="admin")
    before = permissions(api, admin)
    statuses = []
    for caller in (member, project_admin):
        for header, value in [*SPOOFED, *({"(all)": None}.items())]:
            sent = dict(SPOOFED) if value is None else {header: value}
            sent.update(token(caller))
            statuses.append(api.get("/v1/permissions", user=None,
                                    headers=sent).status)
            statuses.append(api.call("POST", "/v1/permissions", {
                "user": "mallory", "role": "admin"}, user=None,
                headers=sent).status)
    assert set(statuses) == {403}
    assert permissions(api, admin) == before
    no_server_errors(api)


def test_grants_are_of_one_domain(keystone, tmp_path, write_config,
                                  start_console_script, sqlite_url):
    api = start(keystone, tmp_path, write_config, start_console_script,
                sqlite_url)
    admin = keystone.admin_token()
    other_name, carol = unique("other"), unique("carol")
    other = keystone.domain(other_name)
    home_carol = keystone.project_member(carol, "pw")
    other_carol = keystone.project_member(carol, "pw", domain_id=other)
    attach = {"scheduling_policy": None}
    assert api.call("POST", "/v1/permissions", {
        "user": carol, "role": "cluster_admin", "cluster": "c1"},
        user=None, headers=token(admin)).status == 201
    assert api.call("PUT", "/v1/clusters/c1", attach, user=None,
                    headers=token(home_carol)).status == 200
    assert api.call("PUT", "/v1/clusters/c1", attach, user=None,
                    headers=token(other_carol)).status == 403
    granted = api.call("POST", "/v1/permissions", {
        "user": carol, "domain": other, "role": "cluster_admin",
        "cluster": "c2"}, user=None, headers=token(admin))
    assert granted.status == 201 and granted.body["domain"] == other
    assert api.call("PUT", "/v1/clusters/c2", attach, user=None,
                    headers=token(other_carol)).status == 200
    assert api.call("PUT", "/v1/clusters/c2", attach, user=None,
                    headers=token(home_carol)).status == 403
    # An unattached policy is its creator's: of her name and domain.
    created = api.call("POST", "/v1/schedulingpolicies", {
        "name": unique("carols"), "weights": [
            {"unit": "RAMWeigher", "factor": -1}]},
        user=None, headers=token(home_carol))
    assert created.status == 201, created.body
    path = f"/v1/schedulingpolicies/{created.body['id']}"
    edit = dict(created.body, description="taken over")
    for read_only in ("id", "version", "locked", "clusters",
                      "created_by"):
        edit.pop(read_only, None)
    assert api.call("PUT", path, edit, user=None,
                    headers=token(other_carol)).status == 403
    assert api.call("DELETE", path, user=None,
                    headers=token(other_carol)).status == 403
    assert api.call("PUT", path, edit, user=None,
                    headers=token(home_carol)).status == 200


def test_a_revoked_token_stops_working_within_the_cache_time(
        keystone, tmp_path, write_config, start_console_script,
        sqlite_url):
    api = start(keystone, tmp_path, write_config, start_console_script,
                sqlite_url)
    admin = keystone.admin_token()
    assert api.get("/v1/permissions", user=None,
                   headers=token(admin)).status == 200
    keystone.revoke(admin)
    revoked_at = time.monotonic()
    while api.get("/v1/permissions", user=None,
                  headers=token(admin)).status == 200:
        assert time.monotonic() - revoked_at < CACHE_SECONDS + 3
        time.sleep(0.2)
    assert api.get("/v1/permissions", user=None,
                   headers=token(admin)).status == 401


#: Tokens no Keystone issued: too long, not ASCII, not a token at all.
GARBAGE_TOKENS = ("a" * 8192, "x" * 5000, "bad token", "tok\u00e9n",
                  "%ff%00", "a" * 4096 + "!")


def test_garbage_tokens_are_401(keystone, tmp_path, write_config,
                                start_console_script, sqlite_url):
    # One server for every token (a start costs a second of CPU); the
    # tokens that are not refused with 401 are listed together.
    api = start(keystone, tmp_path, write_config, start_console_script,
                sqlite_url)
    admin = token(keystone.admin_token())
    wrong = []
    for number, garbage in enumerate(GARBAGE_TOKENS):
        for header in ("X-Auth-Token", "X-Service-Token"):
            case = (number, header, len(garbage), garbage[:12])
            try:
                reply = api.get("/v1/schedulingpolicies", user=None,
                                headers={header: garbage, **(
                                    {} if header == "X-Auth-Token"
                                    else admin)})
            except OSError as e:
                wrong.append((*case, repr(e)))
                continue
            if reply.status != 401:
                wrong.append((*case, reply.status, str(reply.body)[:200]))
    assert not wrong, wrong
    no_server_errors(api)
    assert " ERROR " not in api.process.stderr


def test_an_endpoint_missing_from_the_catalog_is_401(
        keystone, tmp_path, write_config, start_console_script,
        sqlite_url):
    api = start(keystone, tmp_path, write_config, start_console_script,
                sqlite_url, region_name="Nowhere")
    reply = api.get("/v1/schedulingpolicies", user=None,
                    headers=token(keystone.admin_token()))
    assert reply.status == 401, reply.body
    no_server_errors(api)
    assert "[keystone_authtoken] interface" in api.process.stderr
