"""Malformed requests to scheduler-api's WSGI application in-process:
each is a 4xx JSON error naming what is at fault, and nothing is
stored. The same requests over HTTP: tests/functional/
test_api_malformed.py."""

import io
import logging

import pytest
import webob

from scheduler.api import clusters
from scheduler.api import request_checks
from tests.unit.api.fakes import POLICY
from tests.unit.api.fakes import call
from tests.unit.api.fakes import message

POLICIES = "/v1/schedulingpolicies"


def stored(app) -> dict:
    """What the API shows of what it stored."""
    policies = call(app, "GET", POLICIES).json["schedulingpolicies"]
    return {"policies": [p for p in policies if not p["locked"]],
            "clusters": call(app, "GET", "/v1/clusters").json["clusters"],
            "permissions": call(app, "GET", "/v1/permissions").json}


def refused(response: webob.Response, status: int, field: str) -> None:
    assert response.status_int == status, response.body
    assert response.content_type == "application/json"
    assert message(response).startswith(f"{field}: "), message(response)


@pytest.mark.parametrize("method, path, field", [
    ("GET", "/v1/clusters/%ff", "name"),
    ("GET", "/v1/clusters/%ed%a0%80", "name"),
    ("PUT", "/v1/clusters/%ff", "name"),
    ("PUT", "/v1/clusters/%ed%a0%80", "name"),
    ("PUT", "/v1/clusters/a%00b", "name"),
    ("GET", "/v1/schedulingpolicies/%ff", "id"),
    ("PUT", "/v1/schedulingpolicies/%00", "id"),
    ("DELETE", "/v1/schedulingpolicies/%ed%a0%80", "id"),
    ("POST", "/v1/schedulingpolicies/%ff/weights", "id"),
    ("DELETE", "/v1/schedulingpolicies/x/filters/%ff", "unit_id"),
    ("GET", "/v1/schedulingpolicyunits/%ff", "id"),
    ("DELETE", "/v1/schedulingpolicyunits/%00", "id"),
    ("GET", "/v1/migrationpolicies/%c3", "id"),
    ("DELETE", "/v1/permissions/%ff", "id"),
])
def test_path_parameters_not_utf8_or_nul(app, method, path,
                                         field):
    before = stored(app)
    data = {} if method in ("PUT", "POST") else None
    refused(call(app, method, path, data), 400, field)
    assert stored(app) == before


def test_unknown_path_not_utf8_is_404(app):
    response = call(app, "GET", "/v1/nothing/%ff")
    assert response.status_int == 404
    assert message(response) == "no resource /v1/nothing/\\xff"


def test_error_handler_logs_an_undecodable_path(app, monkeypatch,
                                                caplog):
    def boom(parameters):
        raise RuntimeError("a bug")
    monkeypatch.setattr(request_checks, "check_parameters", boom)
    with caplog.at_level(logging.ERROR):
        response = call(app, "GET", "/v1/clusters/%ff%0a")
    assert response.status_int == 500
    assert response.json["error"]["code"] == 500
    assert "GET /v1/clusters/\\xff\\n failed" in caplog.text


@pytest.mark.parametrize("raw", [
    b"[" * 100_000,
    b'{"name": "x", "filters": ' + b"[" * 40 + b"]" * 40 + b"}",
    b'{"name": "x", "properties": ' + b'{"a": ' * 33 + b"1" + b"}" * 34,
])
def test_deep_nesting(app, raw):
    refused(call(app, "POST", POLICIES, raw=raw), 400, "request body")
    assert stored(app)["policies"] == []


def test_brackets_in_strings_are_not_nesting(app):
    name = '\\"' + "[" * 100
    raw = b'{"name": "' + name.encode() + b'"}'
    created = call(app, "POST", POLICIES, raw=raw)
    assert created.status_int == 201, created.body
    assert created.json["name"] == '"' + "[" * 100


@pytest.mark.parametrize("value", ["\\ud800", "\\udfff", "a\\u0000"])
def test_based_on_checked_as_names(app, value):
    raw = b'{"name": "x", "based_on": "' + value.encode() + b'"}'
    refused(call(app, "POST", POLICIES, raw=raw), 400, "based_on")
    assert stored(app)["policies"] == []


@pytest.mark.parametrize("value", [2 ** 63, 2 ** 31, 2 ** 31 - 1,
                                   clusters.MAX_BANDWIDTH_MBPS + 1])
def test_bandwidth_upper_bound(app, value):
    response = call(app, "PUT", "/v1/clusters/c1", {"migration": {
        "bandwidth": {"assignment_method": "custom",
                      "custom_value": value}}})
    refused(response, 400, "migration.bandwidth.custom_value")
    assert str(clusters.MAX_BANDWIDTH_MBPS) in message(response)
    assert stored(app)["clusters"] == []


def test_bandwidth_at_the_bound_is_stored(app):
    bandwidth = {"assignment_method": "custom",
                 "custom_value": clusters.MAX_BANDWIDTH_MBPS}
    response = call(app, "PUT", "/v1/clusters/c1",
                    {"migration": {"bandwidth": bandwidth}})
    assert response.status_int == 200, response.body
    shown = call(app, "GET", "/v1/clusters/c1").json
    assert shown["migration"]["bandwidth"] == bandwidth


class _BrokenInput(io.RawIOBase):
    """A server's chunked reader meeting ``zz`` as a chunk size."""

    def readable(self) -> bool:
        return True

    def read(self, size=-1):
        raise ValueError("Bad chunked transfer size: b'zz'")

    readinto = read


@pytest.mark.parametrize("path, method", [
    (POLICIES, "POST"), ("/v1/clusters/c1", "PUT"),
    ("/v1/permissions", "POST")])
def test_unreadable_body(app, path, method):
    request = webob.Request.blank(path, method=method, headers={
        "Content-Type": "application/json",
        "Transfer-Encoding": "chunked"})
    request.environ["wsgi.input"] = _BrokenInput()
    request.environ["wsgi.input_terminated"] = True
    request.environ.pop("CONTENT_LENGTH", None)
    response = request.get_response(app)
    refused(response, 400, "request body")
    assert "zz" in message(response)
    assert stored(app)["clusters"] == []
    assert stored(app)["policies"] == []


REFUSED_TYPES = [None, "", "text/plain", "text/plain; charset=utf-8",
                 "application/x-www-form-urlencoded",
                 "multipart/form-data; boundary=x", "application/jsonx",
                 "application/merge-patch+json",
                 "application/json; charset=latin-1"]


def _typed(content_type: str | None) -> dict:
    return {} if content_type is None else {"Content-Type": content_type}


def _raw(app, method: str, path: str, raw: bytes,
         content_type: str | None) -> webob.Response:
    request = webob.Request.blank(path, method=method,
                                  headers=_typed(content_type))
    request.body = raw
    if content_type is None:
        request.environ.pop("CONTENT_TYPE", None)
    return request.get_response(app)


@pytest.mark.parametrize("content_type", REFUSED_TYPES)
def test_bodies_other_than_json_are_415(app, content_type):
    created = call(app, "POST", POLICIES, POLICY).json
    before = stored(app)
    policy = f"{POLICIES}/{created['id']}"
    policy_json = b'{"name": "other"}'
    for method, path, raw in [
            ("POST", POLICIES, policy_json),
            ("PUT", policy, policy_json),
            ("POST", policy + "/weights", b'{"unit": "CPUWeigher"}'),
            ("PUT", "/v1/clusters/c1", b'{"properties": {}}'),
            ("POST", "/v1/permissions", b'{"user": "u", "role": "reader"}'),
            ("DELETE", policy, b'{"x": 1}'),
            ("DELETE", policy + "/weights/RAMWeigher", b"x"),
            ("POST", POLICIES, b"")]:
        response = _raw(app, method, path, raw, content_type)
        refused(response, 415, "Content-Type")
    assert stored(app) == before


def test_post_without_a_body_needs_json_too(app):
    response = call(app, "POST", POLICIES)
    refused(response, 415, "Content-Type")
    assert "none" in message(response)


@pytest.mark.parametrize("content_type", [
    "application/json", "application/json; charset=utf-8",
    "Application/JSON;charset=\"UTF-8\"", "application/json; v=1"])
def test_json_content_types_are_accepted(app, content_type):
    response = _raw(app, "POST", POLICIES, b'{"name": "p"}', content_type)
    assert response.status_int == 201, response.body


def test_get_and_delete_without_a_body_need_no_type(app):
    created = call(app, "POST", POLICIES, POLICY)
    path = f"{POLICIES}/{created.json['id']}"
    assert call(app, "GET", path).status_int == 200
    assert call(app, "DELETE", path).status_int == 204


def test_405_before_415(app):
    assert call(app, "PATCH", "/v1/clusters").status_int == 405


@pytest.mark.parametrize("raw", [
    # Unterminated strings of escaped quotes: linear, not quadratic.
    b'{"a": "' + b'\\"' * 500_000,
    b'"' + b'\\"' * 500_000,
    b'[' * 1_000_000,
    b'{"a":' * 200_000,
])
def test_a_megabyte_of_pathological_json_is_refused(app, raw):
    # A quadratic scan of these (the regular expression this replaced)
    # took about an hour of CPU for one request, holding the GIL.
    response = call(app, "POST", "/v1/schedulingpolicies", raw=raw)
    assert response.status_int == 400
    assert response.json["error"]["message"].startswith("request body: ")


def test_null_and_deep_bodies_are_told_apart(app):
    null = call(app, "POST", "/v1/schedulingpolicies", raw=b"null")
    assert "expected a JSON object" in null.json["error"]["message"]
    deep = call(app, "POST", "/v1/schedulingpolicies",
                raw=b'{"a":' + b"[" * 40 + b"]" * 40 + b"}")
    assert "nested deeper than 32" in deep.json["error"]["message"]
