"""Malformed requests, sent raw (http.client, a socket) to a real
scheduler-api on SQLite, PostgreSQL and MariaDB: every one is a 4xx
JSON error naming what is at fault, none is 5xx, nothing is stored,
and the server logs no traceback."""

import json
import socket

import pytest

from scheduler.api import clusters
from tests.functional import api_server

CUSTOM = "migration.bandwidth.custom_value"


@pytest.fixture
def api(db_url, tmp_path, write_config, start_console_script):
    api_server.sync(db_url)
    api_server.grant_matrix_permissions(db_url)
    return api_server.start(tmp_path, write_config, start_console_script,
                            db_url)


def send(api, method: str, path: str, body: bytes | None = None,
         content_type: str | None = "application/json"
         ) -> tuple[int, object]:
    """The status and parsed body; Content-Type exactly as given."""
    reply = api.call(method, path, raw=body, content_type=content_type)
    return reply.status, reply.body


def send_chunked(api, path: str, chunked: bytes) -> tuple[int, bytes]:
    """A POST whose chunked encoding is ``chunked``, as bytes."""
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: {api_server.basic_authorization()}\r\n"
            "Content-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", api.port),
                                  timeout=30) as sock:
        sock.sendall(head.encode() + chunked)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    status = int(reply.split(b" ", 2)[1])
    return status, reply.partition(b"\r\n\r\n")[2]


def _message(body: object) -> str:
    assert isinstance(body, dict), body
    return body["error"]["message"]


def _stored(api) -> tuple:
    policies = api.get("/v1/schedulingpolicies").body["schedulingpolicies"]
    return ([p for p in policies if not p["locked"]],
            api.get("/v1/clusters").body["clusters"])


POLICY = b'{"name": "p"}'
# (method, path, body, Content-Type, status, field the message names)
CASES = [
    ("GET", "/v1/clusters/%ff", None, None, 400, "name"),
    ("GET", "/v1/clusters/%ed%a0%80", None, None, 400, "name"),
    ("PUT", "/v1/clusters/%ff", b"{}", "application/json", 400, "name"),
    ("PUT", "/v1/clusters/%ed%a0%80", b"{}", "application/json", 400,
     "name"),
    ("PUT", "/v1/clusters/a%00b", b"{}", "application/json", 400, "name"),
    ("GET", "/v1/schedulingpolicies/%ff", None, None, 400, "id"),
    ("GET", "/v1/schedulingpolicies/%00", None, None, 400, "id"),
    ("DELETE", "/v1/schedulingpolicies/x/weights/%ff", None, None, 400,
     "unit_id"),
    ("GET", "/v1/schedulingpolicyunits/%ed%a0%80", None, None, 400, "id"),
    ("DELETE", "/v1/permissions/%ff", None, None, 400, "id"),
    ("POST", "/v1/schedulingpolicies", b"[" * 100_000, "application/json",
     400, "request body"),
    ("POST", "/v1/schedulingpolicies",
     b'{"name": "x", "based_on": "\\ud800"}', "application/json", 400,
     "based_on"),
    ("POST", "/v1/schedulingpolicies",
     b'{"name": "x", "based_on": "\\u0000"}', "application/json", 400,
     "based_on"),
    ("PUT", "/v1/clusters/c1", json.dumps({"migration": {"bandwidth": {
        "assignment_method": "custom", "custom_value": 2 ** 63}}}).encode(),
     "application/json", 400, CUSTOM),
    ("PUT", "/v1/clusters/c1", json.dumps({"migration": {"bandwidth": {
        "assignment_method": "custom", "custom_value": 2 ** 31}}}).encode(),
     "application/json", 400, CUSTOM),
    ("POST", "/v1/schedulingpolicies", POLICY, "text/plain", 415,
     "Content-Type"),
    ("POST", "/v1/schedulingpolicies", b"name=p",
     "application/x-www-form-urlencoded", 415, "Content-Type"),
    ("POST", "/v1/schedulingpolicies",
     b'--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n'
     b'{"name": "p"}\r\n--x--\r\n', "multipart/form-data; boundary=x", 415,
     "Content-Type"),
    ("POST", "/v1/schedulingpolicies", POLICY, None, 415, "Content-Type"),
    ("PUT", "/v1/clusters/c1", b'{"properties": {}}', "text/plain", 415,
     "Content-Type"),
]


def test_malformed_requests_are_4xx_naming_the_field(api):
    before = _stored(api)
    statuses = []
    for method, path, body, content_type, status, field in CASES:
        got, reply = send(api, method, path, body, content_type)
        statuses.append(got)
        assert got == status, (method, path, got, reply)
        assert _message(reply).startswith(f"{field}: "), reply
    chunked, reply = send_chunked(api, "/v1/schedulingpolicies",
                                  b"zz\r\n" + POLICY + b"\r\n0\r\n\r\n")
    statuses.append(chunked)
    assert chunked == 400, reply
    assert _message(json.loads(reply)).startswith("request body: ")
    assert all(status < 500 for status in statuses), statuses
    assert _stored(api) == before
    assert "Traceback" not in api.process.stderr, api.process.stderr


def test_well_formed_json_still_works(api):
    created, shown = send(api, "POST", "/v1/schedulingpolicies", POLICY,
                          "application/json; charset=utf-8")
    assert created == 201, shown
    bandwidth = {"assignment_method": "custom",
                 "custom_value": clusters.MAX_BANDWIDTH_MBPS}
    status, shown = send(api, "PUT", "/v1/clusters/c1", json.dumps(
        {"migration": {"bandwidth": bandwidth}}).encode())
    assert status == 200, shown
    assert shown["migration"]["bandwidth"] == bandwidth
    chunked, reply = send_chunked(api, "/v1/schedulingpolicies",
                                  b"%x\r\n%s\r\n0\r\n\r\n"
                                  % (len(b'{"name": "q"}'), b'{"name": "q"}'))
    assert chunked == 201, reply
    assert "Traceback" not in api.process.stderr, api.process.stderr
