"""What the web console calls: /v1/hosts, /v1/explain and /v1/access,
in-process on SQLite, with identities as authentication leaves them."""

import datetime
import json
import re
import subprocess
import sys

import pytest
import webob
from sqlalchemy.orm import Session

from scheduler.api import access
from scheduler.api import app as api_app
from scheduler.api import console
from scheduler.api import explain
from scheduler.api import hosts
from scheduler.api import openapi
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import permissions
from scheduler.hosts import records
from tests import fakes

GRANTS = {"root": ("admin", "*"), "ca": ("cluster_admin", "c1"),
          "reader": ("reader", "*")}


@pytest.fixture
def fleet(scheduler_config):
    """c1: a busy node and one whose metrics are an hour old; c2: one."""
    engine = db_api.get_engine(scheduler_config)
    now = models.utcnow()

    def metrics(cpu: float, memory: float, when: datetime.datetime) -> str:
        stamp = when.isoformat() + "Z"
        return json.dumps([
            {"name": "cpu.percent", "value": cpu, "timestamp": stamp},
            {"name": "memory.percent", "value": memory, "timestamp": stamp}])

    old = now - datetime.timedelta(hours=1)
    fakes.add_node(engine, "busy", memory_mb=16384,
                   metrics=metrics(90.0, 40.0, now))
    fakes.add_node(engine, "quiet", memory_mb=8192, reported=old,
                   metrics=metrics(5.0, 10.0, old))
    fakes.add_node(engine, "other", memory_mb=32768, cluster="c2",
                   metrics=metrics(50.0, 50.0, now))
    with Session(engine) as session, session.begin():
        for user, grant in GRANTS.items():
            permissions.add(session, user, *grant)
    return engine


@pytest.fixture
def routes(scheduler_config):
    return api_app.router(scheduler_config)


def call(routes, path: str, user: str | None = "reader",
         method: str = "GET", data=None,
         headers: dict | None = None) -> webob.Response:
    environ = {} if user is None else {
        access.IDENTITY_KEY: access.Identity(user)}
    request = webob.Request.blank(path, method=method, environ=environ,
                                  headers=headers or {})
    if data is not None:
        request.content_type = "application/json"
        request.body = json.dumps(data).encode()
    return request.get_response(routes)


def test_hosts_list_the_fleet_with_colours_and_staleness(fleet, routes):
    listed = call(routes, "/v1/hosts").json["hosts"]
    by_name = {h["host"]: h for h in listed}
    assert set(by_name) == {"busy", "quiet", "other"}
    busy = by_name["busy"]
    assert set(busy) == set(records.HOST_FIELDS) | {
        "cpu_percent", "memory_percent", "metrics_stale"}
    assert (busy["cpu_percent"], busy["memory_percent"]) == (90.0, 40.0)
    assert busy["state"] == "up" and not busy["metrics_stale"]
    # [metrics] max_age is 300 s: an hour is stale.
    assert by_name["quiet"]["metrics_stale"]
    assert by_name["other"]["cluster"] == "c2"


def test_host_show_and_unknown_host(fleet, routes):
    shown = call(routes, "/v1/hosts/busy.example.org").json
    assert shown["host"] == "busy"
    assert {m["name"] for m in shown["metrics"]} == {"cpu.percent",
                                                     "memory.percent"}
    assert shown["cpu_percent"] == 90.0
    missing = call(routes, "/v1/hosts/nope")
    assert missing.status_int == 404
    assert "nope" in missing.json["error"]["message"]
    # A long name is echoed shortened.
    long = call(routes, "/v1/hosts/" + "x" * 5000)
    assert long.status_int == 404
    assert "xxx..." in long.json["error"]["message"]
    assert len(long.json["error"]["message"]) < 200


def test_a_served_api_loads_the_host_cache_in_the_background(
        fleet, scheduler_config):
    hosts.serve_in_background(scheduler_config)
    manager = hosts.host_manager(scheduler_config)
    try:
        # The thread did the first load: the request path did none.
        assert manager._refresher.load_now(timeout=30)
        assert manager._refresher.loads >= 1
        assert {h.host for h in manager.host_states()} == {
            "busy", "quiet", "other"}
    finally:
        manager.close()


def _command_explain(conf, tmp_path, *args: str) -> dict:
    """``scheduler-manage explain --format json`` (manage_commands.explain)
    on the test's database, in its own interpreter."""
    config = tmp_path / "manage.conf"
    config.write_text(f"[DEFAULT]\nstate_path = {conf.state_path}\n"
                      f"[database]\nconnection = {conf.database.connection}\n")
    done = subprocess.run(
        [sys.executable, "-m", "scheduler.cmd.manage", "--config-file",
         str(config), "explain", *args, "--format", "json"],
        capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_explain_is_the_commands_decision(fleet, routes, scheduler_config,
                                          tmp_path):
    request = {"flavor": {"vcpus": 1, "memory_mb": 1024, "root_gb": 1},
               "cluster": "c1"}
    answer = call(routes, "/v1/explain", method="POST", data=request)
    assert answer.status_int == 200
    command = _command_explain(scheduler_config, tmp_path, "--vcpus", "1",
                               "--ram", "1024", "--disk", "1",
                               "--cluster", "c1")
    assert answer.json["selected"] == command["selected"]
    assert answer.json["selected"][0] in ("busy", "quiet")
    assert answer.json["policy"] is None is command["policy"]
    assert [(h["host"], h["filtered_by"]) for h in answer.json["hosts"]] == [
        (h["host"], h["filtered_by"]) for h in command["hosts"]]
    assert {h["host"] for h in answer.json["hosts"]} == {"busy", "quiet",
                                                         "other"}


@pytest.mark.parametrize("data, status, field", [
    ({"flavor": {"vcpus": "two", "memory_mb": 1, "root_gb": 1}}, 400,
     "request_spec.flavor.vcpus"),
    ({"flavor": {"vcpus": 1, "memory_mb": 1, "root_gb": 1},
      "cluster": "c9"}, 400, "request_spec.cluster: "),
    ({"flavor": {"vcpus": 1, "memory_mb": 1, "root_gb": 1,
                 "extra_specs": {"resources:cpu.percent": "<<"}}}, 400,
     "request_spec.flavor.extra_specs"),
])
def test_explain_refusals_name_the_field(fleet, routes, data, status,
                                         field):
    answer = call(routes, "/v1/explain", method="POST", data=data)
    assert answer.status_int == status
    assert answer.json["error"]["message"].startswith(field)


def test_an_extra_spec_the_flavor_lacks_is_named_as_the_request():
    """Never a scheduler hint: the hints' schema admits no extra spec."""
    sent = {"flavor": {"extra_specs": {"resources:cpu.percent": "<<"}},
            "scheduler_hints": {"query": "[]"}}
    assert explain._spec_field(sent, "resources:cpu.percent") == (
        "request_spec.flavor.extra_specs.resources:cpu.percent")
    assert explain._spec_field(sent, "query") == "request_spec"
    assert explain._spec_field({"flavor": {}}, "x") == "request_spec"


def test_explain_needs_a_role(routes):
    answer = call(routes, "/v1/explain", user="noone", method="POST",
                  data={"flavor": {"vcpus": 1, "memory_mb": 1,
                                   "root_gb": 1}})
    assert answer.status_int == 403


def test_explain_without_nodes_is_a_conflict(scheduler_config, routes):
    engine = db_api.get_engine(scheduler_config)
    with Session(engine) as session, session.begin():
        permissions.add(session, "reader", "reader", "*")
    answer = call(routes, "/v1/explain", method="POST", data={
        "flavor": {"vcpus": 1, "memory_mb": 1, "root_gb": 1}})
    assert answer.status_int == 409
    assert "no compute node is registered" in answer.json["error"]["message"]


def _policy(routes, name: str, cluster: str | None) -> str:
    created = call(routes, "/v1/schedulingpolicies", "root", "POST",
                   {"name": name, "weights": [{"unit": "RAMWeigher",
                                               "factor": 1}]})
    assert created.status_int == 201
    if cluster is not None:
        attached = call(routes, f"/v1/clusters/{cluster}", "root", "PUT",
                        {"scheduling_policy": {"id": created.json["id"]}})
        assert attached.status_int == 200
    return created.json["id"]


def test_access_says_what_each_role_may_do(fleet, routes):
    on_c1 = _policy(routes, "on-c1", "c1")
    on_c2 = _policy(routes, "on-c2", "c2")
    admin = call(routes, "/v1/access", "root").json
    assert admin["roles"] == ["admin"]
    assert all(admin["may"].values())
    assert set(admin["edit_policies"]) == {on_c1, on_c2}
    assert admin["attach_clusters"] == ["c1", "c2"]
    ca = call(routes, "/v1/access", "ca").json
    assert ca["may"] == {"create_policy": True, "disable_units": False,
                         "manage_permissions": False}
    assert ca["edit_policies"] == ca["delete_policies"] == [on_c1]
    assert ca["attach_clusters"] == ["c1"]
    reader = call(routes, "/v1/access", "reader").json
    assert not any(reader["may"].values())
    assert reader["edit_policies"] == reader["attach_clusters"] == []
    # What it offers is what the server does.
    refused = call(routes, f"/v1/schedulingpolicies/{on_c2}", "ca",
                   "DELETE")
    assert refused.status_int == 403
    assert call(routes, "/v1/access", "stranger").status_int == 403
    assert call(routes, "/v1/access", None).status_int == 401


def test_console_files_need_a_role(fleet, routes):
    page = call(routes, "/ui")
    assert page.status_int == 200
    assert page.content_type == "text/html"
    assert "default-src 'none'" in page.headers["Content-Security-Policy"]
    script = call(routes, "/ui/app.js")
    assert script.content_type == "text/javascript"
    again = call(routes, "/ui/app.js",
                 headers={"If-None-Match": script.headers["ETag"]})
    assert again.status_int == 304
    assert call(routes, "/ui/nothing.js").status_int == 404
    assert call(routes, "/ui/..%2fapp.py").status_int == 404
    # The router hands show_file the decoded name, which names no file.
    dots = call(routes, "/ui/%2e%2e")
    assert dots.status_int == 404
    assert dots.json["error"]["message"] == "no console file '..'"
    assert call(routes, "/ui", "stranger").status_int == 403
    assert call(routes, "/ui", None).status_int == 401


def test_every_file_the_console_loads_is_served(routes, fleet):
    """index.html's links and every module's imports name files that
    ship (no CDN, no build step)."""
    index = call(routes, "/ui").text
    wanted = set(re.findall(r'(?:src|href)="/ui/([^"]+)"', index))
    for path in console.ASSETS.glob("*.js"):
        wanted |= set(re.findall(r'from "\./([^"]+)"', path.read_text()))
    assert wanted >= {"app.js", "style.css", "fleet.js"}
    for name in wanted:
        assert call(routes, f"/ui/{name}").status_int == 200, name
    assert not re.search(r"https?://", index)


def test_openapi_lists_every_v1_route(routes):
    paths = openapi.document()["paths"]
    for path, methods in routes.handlers.items():
        if path.startswith("/v1/") and path != "/v1/openapi.json":
            assert set(paths[path]) == {m.lower() for m in methods}, path
