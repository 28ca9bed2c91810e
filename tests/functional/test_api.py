"""scheduler-api as a real process over HTTP, on SQLite and PostgreSQL:
every endpoint, bad input, ETag races and locked/in-use conflicts."""

import threading

import pytest

from tests.functional import api_server

BACKENDS = ["sqlite", "postgresql"]
POLICY = {"name": "packing",
          "filters": [{"unit": "RamFilter", "position": "first"},
                      {"unit": "CoreFilter"}],
          "weights": [{"unit": "RAMWeigher", "factor": -1}],
          "balance": {"unit": "even_distribution"},
          "properties": {"HighUtilization": 70}}


@pytest.fixture(params=BACKENDS)
def api(request, tmp_path, write_config, start_console_script):
    url = request.getfixturevalue(f"{request.param}_url")
    api_server.sync(url)
    api_server.grant_matrix_permissions(url)
    return api_server.start(tmp_path, write_config, start_console_script,
                            url)


def _policies(api) -> list[dict]:
    return api.get("/v1/schedulingpolicies").body["schedulingpolicies"]


def _stored(api) -> list[dict]:
    return [p for p in _policies(api) if not p["locked"]]


def test_public_paths_and_credentials(api):
    assert api.get("/", user=None).body["versions"][0]["id"] == "v1"
    assert api.get("/healthcheck", user=None).status == 200
    document = api.get("/v1/openapi.json", user=None).body
    assert document["openapi"].startswith("3.")
    assert "/v1/schedulingpolicies/{id}/weights/{unit_id}" in document[
        "paths"]
    denied = api.get("/v1/schedulingpolicyunits", user=None)
    assert denied.status == 401
    assert set(denied.body["error"]) == {"code", "title", "message"}
    assert api.get("/v1/schedulingpolicyunits",
                   headers={"Authorization": "Basic YWRtaW46d3Jvbmc="},
                   user=None).status == 401
    assert api.get("/v1/nothing").status == 404
    assert api.call("PATCH", "/v1/clusters").status == 405


def test_policy_units(api):
    units = api.get("/v1/schedulingpolicyunits").body[
        "schedulingpolicyunits"]
    by_name = {u["name"]: u for u in units}
    assert by_name["RamFilter"]["type"] == "filter"
    assert by_name["RAMWeigher"]["type"] == "weight"
    balancer = by_name["even_distribution"]
    assert balancer["type"] == "load_balancing"
    assert {p["name"] for p in balancer["properties"]} == {
        "HighUtilization", "CpuOverCommitDurationMinutes"}
    assert all(u["internal"] and u["enabled"] for u in units)
    one = api.get(f"/v1/schedulingpolicyunits/{by_name['RamFilter']['id']}")
    assert one.body == by_name["RamFilter"]
    # Internal units cannot be disabled.
    refused = api.call("DELETE", "/v1/schedulingpolicyunits/"
                       + by_name["RamFilter"]["id"])
    assert refused.status == 409 and "internal" in refused.message


def _check_a_locked_policy(api, base: dict) -> None:
    """A locked policy is copied; its edit and deletion are refused."""
    copy = api.call("POST", "/v1/schedulingpolicies",
                    {"name": "my_power", "based_on": base["id"]})
    assert copy.status == 201
    assert copy.body["weights"] == base["weights"]
    assert copy.body["balance"] == base["balance"]
    refused = api.call("PUT", f"/v1/schedulingpolicies/{base['id']}",
                       {"description": "x"})
    assert refused.status == 409 and "locked" in refused.message
    assert api.call("DELETE", f"/v1/schedulingpolicies/{base['id']}"
                    ).status == 409


def test_policy_lifecycle(api):
    locked = {p["name"]: p for p in _policies(api) if p["locked"]}
    assert {"none", "evenly_distributed", "power_saving",
            "vm_evenly_distributed"} <= set(locked)
    created = api.call("POST", "/v1/schedulingpolicies", POLICY)
    assert created.status == 201, created.body
    policy = created.body
    path = f"/v1/schedulingpolicies/{policy['id']}"
    assert created.headers["ETag"] == '"1"'
    assert [f["unit"] for f in policy["filters"]] == ["RamFilter",
                                                      "CoreFilter"]
    assert policy["balance"]["unit"] == "even_distribution"
    # A PUT takes back what a GET gave.
    shown = api.get(path)
    edited = dict(shown.body, description="packs hosts")
    put = api.call("PUT", path, edited,
                   headers={"If-Match": shown.headers["ETag"]})
    assert put.status == 200, put.body
    assert put.body["description"] == "packs hosts"
    assert put.body["version"] == 2
    # Sub-collections.
    weights = f"{path}/weights"
    added = api.call("POST", weights, {"unit": "CPUWeigher", "factor": 3})
    assert added.status == 201 and added.body["factor"] == 3
    assert [w["unit"] for w in api.get(weights).body["weights"]] == [
        "RAMWeigher", "CPUWeigher"]
    assert api.get(f"{weights}/CPUWeigher").body["factor"] == 3
    assert api.call("DELETE", f"{weights}/{added.body['unit_id']}"
                    ).status == 204
    assert api.call("POST", f"{path}/balances",
                    {"unit": "power_saving"}).status == 409
    assert api.call("DELETE", f"{path}/balances/even_distribution"
                    ).status == 204
    assert api.get(f"{path}/balances").body == {"balances": []}
    assert api.call("POST", f"{path}/balances",
                    {"unit": "power_saving"}).status == 201
    assert api.call("DELETE", f"{path}/filters/CoreFilter").status == 204
    assert [f["unit"] for f in api.get(f"{path}/filters").body[
        "filters"]] == ["RamFilter"]
    _check_a_locked_policy(api, locked["power_saving"])
    # Attached: 409 naming the cluster; detached: deleted.
    attach = api.call("PUT", "/v1/clusters/c1",
                      {"scheduling_policy": {"id": policy["id"]}})
    assert attach.status == 200, attach.body
    assert api.get(path).body["clusters"] == ["c1"]
    in_use = api.call("DELETE", path)
    assert in_use.status == 409 and "c1" in in_use.message
    assert api.call("PUT", "/v1/clusters/c1",
                    {"scheduling_policy": None}).status == 200
    assert api.call("DELETE", path).status == 204
    assert api.get(path).status == 404


def test_clusters_and_migration_policies(api):
    created = api.call("POST", "/v1/schedulingpolicies", POLICY).body
    cluster = api.call("PUT", "/v1/clusters/c7", {
        "scheduling_policy": {"id": created["id"]},
        "properties": {"HighUtilization": 90},
        "migration": {"policy": {"id": "post_copy"},
                      "bandwidth": {"assignment_method": "custom",
                                    "custom_value": 500}}})
    assert cluster.status == 200, cluster.body
    shown = api.get("/v1/clusters/c7")
    assert shown.body["scheduling_policy"]["name"] == "packing"
    assert shown.body["migration"]["bandwidth"]["custom_value"] == 500
    # Fields left out keep their value.
    kept = api.call("PUT", "/v1/clusters/c7", {"properties": {}},
                    headers={"If-Match": shown.headers["ETag"]})
    assert kept.body["migration"]["policy"]["id"] == "post_copy"
    assert kept.body["scheduling_policy"]["id"] == created["id"]
    stale = api.call("PUT", "/v1/clusters/c7", {"properties": {}},
                     headers={"If-Match": shown.headers["ETag"]})
    assert stale.status == 412
    names = [c["name"] for c in api.get("/v1/clusters").body["clusters"]]
    assert "c7" in names
    assert api.get("/v1/clusters/nowhere").status == 404
    policies = api.get("/v1/migrationpolicies").body["migrationpolicies"]
    assert {"legacy", "minimal_downtime", "post_copy",
            "suspend_workload_if_needed"} <= {p["id"] for p in policies}
    assert api.get("/v1/migrationpolicies/post_copy").body["name"]
    assert api.call("POST", "/v1/migrationpolicies", {}).status == 405
    bad = api.call("PUT", "/v1/clusters/c7",
                   {"migration": {"policy": {"id": "teleport"}}})
    assert bad.status == 400 and "migration.policy.id" in bad.message


def test_permissions_endpoint(api):
    listed = api.get("/v1/permissions").body["permissions"]
    assert {(p["user"], p["role"], p["cluster"]) for p in listed} >= {
        ("ca_c1", "cluster_admin", "c1"), ("admin", "admin", "*")}
    added = api.call("POST", "/v1/permissions",
                     {"user": "eve", "role": "reader"})
    assert added.status == 201 and added.body["cluster"] == "*"
    assert api.call("POST", "/v1/permissions",
                    {"user": "eve", "role": "reader"}).status == 409
    bad = api.call("POST", "/v1/permissions",
                   {"user": "eve", "role": "owner"})
    assert bad.status == 400 and bad.message.startswith("role")
    assert api.call("DELETE", f"/v1/permissions/{added.body['id']}"
                    ).status == 204
    assert api.call("DELETE", f"/v1/permissions/{added.body['id']}"
                    ).status == 404


BAD_INPUT = [
    (b'{"name": ', 400, "malformed JSON"),
    (b'[1, 2]', 400, "request body"),
    ({"name": "x", "colour": "red"}, 400, "colour"),
    ({"name": 7}, 400, "name"),
    ({"name": "x", "filters": "RamFilter"}, 400, "filters"),
    ({"name": "x", "filters": [{"unit": "NoSuchFilter"}]}, 400,
     "filters[0].unit"),
    ({"name": "x", "filters": [{"unit": "RamFilter", "position": 2}]}, 400,
     "filters[0].position"),
    ({"name": "x", "weights": [{"unit": "RAMWeigher", "factor": 1.5}]},
     400, "weights[0].factor"),
    ({"name": "x", "weights": [{"unit": "RAMWeigher", "factor": True}]},
     400, "weights[0].factor"),
    ({"name": "x", "balance": {"unit": "even_distribution"},
      "properties": {"HighUtilization": 120}}, 400, "properties"),
    ({"name": "x", "properties": {"HighUtilization": 70}}, 400,
     "properties"),
    ({"name": "x", "balance": [{"unit": "even_distribution"},
                               {"unit": "power_saving"}]}, 400, "balance"),
    ({"name": "x", "normalization": "sideways"}, 400, "normalization"),
    ({"name": "x", "filters": [{"unit": "RamFilter"},
                               {"unit": "RamFilter"}]}, 400, "filters"),
    ({"name": "none"}, 409, "name"),
]


def test_bad_input_is_refused_naming_the_field(api):
    # Every case on one server: each stores nothing, so each starts from
    # what the one before left (a server per case was 2 s of start-up).
    before = _stored(api)
    wrong = []
    for body, status, field in BAD_INPUT:
        raw = body if isinstance(body, bytes) else None
        reply = api.call("POST", "/v1/schedulingpolicies",
                         None if raw else body, raw=raw)
        stored = _stored(api)
        if (reply.status != status or field not in reply.message
                or stored != before):
            wrong.append({"body": body, "expected": (status, field),
                          "got": (reply.status, reply.message),
                          "stored": stored})
    assert wrong == []


def test_oversized_body_is_413_and_stores_nothing(api):
    big = b'{"name": "big", "description": "' + b"x" * (2 << 20) + b'"}'
    reply = api.call("POST", "/v1/schedulingpolicies", raw=big)
    assert reply.status == 413
    assert _stored(api) == []


def test_two_editors_racing_never_lose_an_edit(api):
    policy = api.call("POST", "/v1/schedulingpolicies", POLICY).body
    path = f"/v1/schedulingpolicies/{policy['id']}"
    shown = api.get(path)
    barrier = threading.Barrier(2)
    results: dict[str, int] = {}

    def edit(name: str) -> None:
        barrier.wait()
        results[name] = api.call(
            "PUT", path, {"description": name},
            headers={"If-Match": shown.headers["ETag"]}).status

    threads = [threading.Thread(target=edit, args=(n,))
               for n in ("alice", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results.values()) == [200, 412], results
    winner = next(n for n, status in results.items() if status == 200)
    final = api.get(path).body
    assert final["description"] == winner
    assert final["version"] == 2
