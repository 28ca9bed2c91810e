"""The rule matrix of scheduler-api as run: each action by admin,
cluster_admin of c1, cluster_admin of *, reader, a user without role
and an unauthenticated caller. A denied request changes nothing. The
matrix's grants are written as ``scheduler-manage permission add`` writes
them (``scheduler.db.permissions``), in this process: the command itself
is run by ``test_permission_commands``."""

import http.client
import os
import subprocess
import sys

import pytest

from tests.functional import api_server

MANAGE = "scheduler-manage"
CALLERS = ("admin", "ca_c1", "ca_all", "reader", "nobody", None)
#: action -> expected status per caller, in CALLERS order.
MATRIX = {
    "read policies": (200, 200, 200, 200, 403, 401),
    "create a policy": (201, 201, 201, 403, 403, 401),
    "edit a policy of c1": (200, 200, 200, 403, 403, 401),
    "edit a policy of c2": (200, 403, 200, 403, 403, 401),
    "attach to c1": (200, 200, 200, 403, 403, 401),
    "attach to c2": (200, 403, 200, 403, 403, 401),
    "delete another's unattached policy": (204, 403, 204, 403, 403, 401),
    "disable an internal unit": (409, 403, 403, 403, 403, 401),
    "list permissions": (200, 403, 403, 403, 403, 401),
    "grant a permission": (201, 403, 403, 403, 403, 401),
}
POLICY = {"weights": [{"unit": "RAMWeigher", "factor": -1}]}


@pytest.fixture(params=["sqlite", "postgresql"])
def api(request, tmp_path, write_config, start_console_script):
    url = request.getfixturevalue(f"{request.param}_url")
    api_server.sync(url)
    api_server.grant_matrix_permissions(url)
    return api_server.start(tmp_path, write_config, start_console_script,
                            url)


def _create(api, name: str, cluster: str | None = None) -> str:
    reply = api.call("POST", "/v1/schedulingpolicies",
                     dict(POLICY, name=name))
    assert reply.status == 201, reply.body
    if cluster is not None:
        assert api.call("PUT", f"/v1/clusters/{cluster}", {
            "scheduling_policy": {"id": reply.body["id"]}}).status == 200
    return reply.body["id"]


def _act(api, action: str, user: str | None, ids: dict) -> int:
    key = user or "anonymous"
    path = "/v1/schedulingpolicies"
    if action == "read policies":
        return api.get(path, user=user).status
    if action == "create a policy":
        return api.call("POST", path, dict(POLICY, name=f"by-{key}"),
                        user=user).status
    if action.startswith("edit a policy of "):
        policy = ids[action[-2:]]
        return api.call("PUT", f"{path}/{policy}",
                        {"description": f"by {key}"}, user=user).status
    if action.startswith("attach to "):
        cluster = action[-2:]
        return api.call("PUT", f"/v1/clusters/{cluster}", {
            "scheduling_policy": {"id": ids[cluster]}}, user=user).status
    if action == "delete another's unattached policy":
        victim = _create(api, f"victim-{key}")
        return api.call("DELETE", f"{path}/{victim}", user=user).status
    if action == "disable an internal unit":
        units = api.get("/v1/schedulingpolicyunits").body[
            "schedulingpolicyunits"]
        return api.call("DELETE", f"/v1/schedulingpolicyunits/"
                        f"{units[0]['id']}", user=user).status
    if action == "list permissions":
        return api.get("/v1/permissions", user=user).status
    if action == "grant a permission":
        return api.call("POST", "/v1/permissions",
                        {"user": f"new-{key}", "role": "reader"},
                        user=user).status
    raise AssertionError(action)


def test_rule_matrix(api):
    ids = {"c1": _create(api, "of-c1", "c1"), "c2": _create(api, "of-c2",
                                                            "c2")}
    ran = {action: tuple(_act(api, action, user, ids) for user in CALLERS)
           for action in MATRIX}
    print("\naction | " + " | ".join(u or "unauthenticated"
                                     for u in CALLERS))
    for action, statuses in ran.items():
        print(f"{action} | " + " | ".join(map(str, statuses)))
    assert ran == MATRIX
    # Denied edits changed nothing: the last allowed editor's text stays.
    for cluster in ("c1", "c2"):
        shown = api.get(f"/v1/schedulingpolicies/{ids[cluster]}").body
        assert shown["description"] == "by ca_all"
    names = {p["name"] for p in api.get("/v1/schedulingpolicies").body[
        "schedulingpolicies"]}
    assert {"by-admin", "by-ca_c1", "by-ca_all"} <= names
    assert not {"by-reader", "by-nobody", "by-anonymous"} & names
    granted = {p["user"] for p in api.get("/v1/permissions").body[
        "permissions"]}
    assert "new-admin" in granted and "new-ca_c1" not in granted


def test_cluster_admin_edits_what_it_created_until_attached_elsewhere(api):
    mine = api.call("POST", "/v1/schedulingpolicies",
                    dict(POLICY, name="mine"), user="ca_c1").body["id"]
    path = f"/v1/schedulingpolicies/{mine}"
    assert api.call("PUT", path, {"description": "v2"},
                    user="ca_c1").status == 200
    assert api.call("PUT", "/v1/clusters/c1", {
        "scheduling_policy": {"id": mine}}, user="ca_c1").status == 200
    assert api.call("PUT", path, {"description": "v3"},
                    user="ca_c1").status == 200
    # Once c2 uses it too, only a cluster_admin of both (or *) may edit.
    assert api.call("PUT", "/v1/clusters/c2", {
        "scheduling_policy": {"id": mine}}, user="ca_all").status == 200
    denied = api.call("PUT", path, {"description": "v4"}, user="ca_c1")
    assert denied.status == 403
    assert "scheduler:policy:edit" in denied.message
    assert api.get(path).body["description"] == "v3"


def test_permission_commands(run_console_script, write_config, sqlite_url):
    config = write_config({"database": {"connection": sqlite_url}})

    def manage(*args: str):
        return run_console_script(MANAGE, "permission", *args,
                                  config_file=config)

    assert run_console_script(MANAGE, "db", "sync",
                              config_file=config).returncode == 0
    added = manage("add", "--user", "bob", "--role", "cluster_admin",
                   "--cluster", "rack-a")
    assert added.returncode == 0, added.stderr
    permission_id = added.stdout.strip().splitlines()[-1]
    assert manage("add", "--user", "bob", "--role", "cluster_admin",
                  "--cluster", "rack-a").returncode == 1
    bad = manage("add", "--user", "ann", "--role", "admin", "--cluster",
                 "rack-a")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].endswith(
        "--cluster: admin is system-wide: expected *")
    listed = manage("list", "--format", "json")
    assert '"user": "bob"' in listed.stdout and permission_id in (
        listed.stdout)
    assert manage("remove", permission_id).returncode == 0
    assert manage("remove", permission_id).returncode == 1
    assert permission_id not in manage("list").stdout


@pytest.mark.parametrize("options,message", [
    ({"api": {"auth_strategy": "noauth", "host": "0.0.0.0"}},
     "[api] host: auth_strategy noauth needs a loopback address"),
    ({"api": {"auth_strategy": "http_basic"},
      "oslo_middleware": {"http_basic_auth_user_file": "/nonexistent"}},
     "[oslo_middleware] http_basic_auth_user_file"),
    ({"api": {"auth_strategy": "sideways"}}, "auth_strategy"),
])
def test_unusable_auth_configuration_exits_2(run_console_script,
                                             write_config, sqlite_url,
                                             options, message):
    config = write_config({"database": {"connection": sqlite_url},
                           **options})
    result = run_console_script("scheduler-api", config_file=config)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


def test_wsgi_application_for_uwsgi_and_gunicorn(tmp_path, write_config,
                                                 sqlite_url):
    api_server.sync(sqlite_url)
    config = write_config({"database": {"connection": sqlite_url},
                           "api": {"auth_strategy": "noauth"}},
                          name="wsgi.conf")
    script = ("import webob\n"
              "from scheduler.cmd.wsgi import application\n"
              "print(webob.Request.blank('/v1/schedulingpolicyunits')"
              ".get_response(application).status)\n")
    result = subprocess.run([sys.executable, "-c", script],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ,
                                 "SCHEDULER_API_CONFIG": str(config)})
    assert result.stdout.strip() == "200 OK", result.stderr


def test_sigterm_stops_the_server_with_status_0(tmp_path, write_config,
                                                start_console_script,
                                                sqlite_url):
    api_server.sync(sqlite_url)
    api = api_server.start(tmp_path, write_config, start_console_script,
                           sqlite_url, strategy="noauth")
    # A keep-alive connection left open does not hold the server up.
    connection = http.client.HTTPConnection("127.0.0.1", api.port)
    connection.request("GET", "/v1/schedulingpolicies")
    assert connection.getresponse().read()
    try:
        assert api.process.stop(timeout=30) == 0, api.process.stderr
    finally:
        connection.close()
