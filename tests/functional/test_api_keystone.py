"""scheduler-api with auth_strategy keystone against a real Keystone:
a system-scoped admin is an admin, a project member a reader, a caller
without a valid token is refused."""

import pytest

from tests.functional import api_server
from tests.functional import keystone_server

POLICY = {"name": "by-keystone-admin",
          "weights": [{"unit": "RAMWeigher", "factor": -1}]}


@pytest.fixture
def keystone(tmp_path):
    server = keystone_server.Keystone(tmp_path)
    yield server
    server.stop()


def test_keystone_tokens(keystone, tmp_path, write_config,
                         start_console_script, sqlite_url):
    api_server.sync(sqlite_url)
    api = api_server.start(
        tmp_path, write_config, start_console_script, sqlite_url,
        strategy="keystone",
        extra={"keystone_authtoken": keystone_server.authtoken_section(
            keystone)})
    admin = {"X-Auth-Token": keystone.admin_token()}
    member = {"X-Auth-Token": keystone.project_member("carol", "pw")}

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
        "user": "carol", "role": "cluster_admin", "cluster": "c1"},
        user=None, headers=admin)
    assert granted.status == 201
    assert api.call("PUT", "/v1/clusters/c1", {"scheduling_policy": {
        "id": created.body["id"]}}, user=None,
        headers=member).status == 200
    assert api.get("/v1/schedulingpolicies", user=None).status == 401
    assert api.get("/v1/schedulingpolicies", user=None, headers={
        "X-Auth-Token": "not-a-token"}).status == 401
