"""scheduler-api's WSGI application in-process (noauth, SQLite): the
refusals that name the field, read-only fields, conditional requests."""


import pytest
import webob

from scheduler.api import body
from tests.unit.api.fakes import POLICY
from tests.unit.api.fakes import call
from tests.unit.api.fakes import message


@pytest.mark.parametrize("raw, field", [
    (b'{"name": "x", "description": NaN}', "request body"),
    (b'{"name": "x", "weights": [{"unit": "RAMWeigher", "factor": '
     b'Infinity}]}', "request body"),
    (b'\xff\xfe', "request body"),
    (b'{"name": "\\ud800"}', "name"),
    (b'{"name": ""}', "name"),
    (b'{"name": "x", "filters": [{"unit": "RamFilter", "pos": 1}]}',
     "filters[0].pos"),
    (b'{"name": "x", "filters": [{"position": "first"}]}',
     "filters[0].unit"),
    (b'{"name": "x", "weights": [{"unit": "RAMWeigher", '
     b'"factor": 10000000}]}', "weights[0].factor"),
    (b'{"name": "x", "balance": {"unit": "RamFilter"}}', "balance.unit"),
    (b'{"name": "x", "based_on": "nope"}', "based_on"),
])
def test_refusals_name_the_field(app, raw, field):
    response = call(app, "POST", "/v1/schedulingpolicies", raw=raw)
    assert response.status_int == 400
    assert message(response).startswith(field)
    listed = call(app, "GET", "/v1/schedulingpolicies").json
    assert all(p["locked"] for p in listed["schedulingpolicies"])


def test_read_only_fields_and_conditional_get(app):
    created = call(app, "POST", "/v1/schedulingpolicies", POLICY)
    path = f"/v1/schedulingpolicies/{created.json['id']}"
    changed = call(app, "PUT", path, dict(created.json, locked=True))
    assert changed.status_int == 400
    assert message(changed).startswith("locked")
    etag = call(app, "GET", path).headers["ETag"]
    assert call(app, "GET", path,
                headers={"If-None-Match": etag}).status_int == 304
    stale = call(app, "DELETE", path, headers={"If-Match": '"7"'})
    assert stale.status_int == 412
    assert call(app, "DELETE", path, headers={"If-Match": etag}
                ).status_int == 204


@pytest.mark.parametrize("data, field", [
    ({"properties": {"HighUtilization": 90}}, "properties"),
    ({"scheduling_policy": {"id": "nope"}}, "scheduling_policy.id"),
    ({"migration": {"bandwidth": {"assignment_method": "custom"}}},
     "migration.bandwidth.custom_value"),
    ({"migration": {"bandwidth": {"assignment_method": "fast"}}},
     "migration.bandwidth.assignment_method"),
    ({"name": "other"}, "name"),
    ({"colour": "red"}, "colour"),
])
def test_cluster_refusals(app, data, field):
    response = call(app, "PUT", "/v1/clusters/c1", data)
    assert response.status_int == 400
    assert message(response).startswith(field)
    assert call(app, "GET", "/v1/clusters").json == {"clusters": []}


def test_permission_refusals(app):
    admin_on_one = call(app, "POST", "/v1/permissions",
                        {"user": "a", "role": "admin", "cluster": "c1"})
    assert message(admin_on_one).startswith("cluster")
    assert message(call(app, "POST", "/v1/permissions",
                        {"user": "", "role": "reader"})).startswith("user")
    assert call(app, "GET", "/v1/permissions").json == {"permissions": []}


def test_size_limit_is_checked_before_reading(app):
    request = webob.Request.blank("/v1/schedulingpolicies", method="POST",
                                  content_type="application/json")
    request.body = b"{}"
    request.content_length = body.MAX_BODY + 1
    assert request.get_response(app).status_int == 413


def test_unknown_paths_and_methods(app):
    assert call(app, "GET", "/v2").status_int == 404
    not_allowed = call(app, "POST", "/v1/migrationpolicies", {})
    assert not_allowed.status_int == 405
    assert not_allowed.headers["Allow"] == "GET"


@pytest.mark.parametrize("host, status", [
    ("localhost:8795", 200), ("127.0.0.1:8795", 200), ("[::1]:8795", 200),
    ("LOCALHOST", 200), ("127.0.0.1", 200),
    ("attacker.example:8795", 400), ("localhost.attacker.example", 400),
    ("127.0.0.1.nip.io", 400), ("", 400),
])
def test_noauth_answers_only_its_own_host_names(app, host, status):
    """DNS rebinding: a page whose name resolves to 127.0.0.1 reaches
    the loopback API with its own name in Host; noauth refuses it, and
    changes nothing."""
    request = webob.Request.blank("/v1/schedulingpolicies", method="POST",
                                  headers={"Host": host})
    request.content_type = "application/json"
    request.body = b'{"name": "rebound"}'
    response = request.get_response(app)
    if status == 400:
        assert response.status_int == 400
        assert message(response).startswith("Host header: ")
        listed = call(app, "GET", "/v1/schedulingpolicies").json
        assert "rebound" not in {p["name"]
                                 for p in listed["schedulingpolicies"]}
    else:
        assert response.status_int == 201
