"""scheduler.api.server: the deadline on reading a request, the JSON
form of the server's own errors, the waitress settings from [api], and
the open files limit; in-process, on socket pairs, no clock waited on."""

import json
import resource
import socket

import pytest
from oslo_config import cfg
from waitress import adjustments

from scheduler.api import body
from scheduler.api import server as api_server
from scheduler.conf import api as api_conf

TIMEOUT = 10


class Dispatcher:
    """Takes tasks without running them: the test runs them."""

    def __init__(self) -> None:
        self.tasks = []

    def add_task(self, task) -> None:
        self.tasks.append(task)

    def shutdown(self) -> None:
        pass


@pytest.fixture
def server():
    adj = adjustments.Adjustments(host="127.0.0.1", port=0)
    listening = api_server.DeadlineServer(
        lambda environ, start: [], TIMEOUT, map={}, dispatcher=Dispatcher(),
        adj=adj, sockinfo=adj.listen[0], _start=False)
    yield listening
    listening.close()


@pytest.fixture
def connection(server):
    """A channel of the server and the client's end of it."""
    ours, theirs = socket.socketpair()
    theirs.settimeout(5)
    channel = api_server.DeadlineChannel(server, ours, ("192.0.2.1", 1),
                                         server.adj, map=server._map)
    yield channel, theirs
    channel.close()
    theirs.close()


def _answer(channel, client: socket.socket) -> tuple[bytes, dict]:
    channel.handle_write()
    head, _, content = client.recv(65536).partition(b"\r\n\r\n")
    return head, json.loads(content)


def _age(channel, seconds: float) -> None:
    """As if the request in progress began ``seconds`` earlier."""
    channel.request.started -= seconds


def test_a_request_still_arriving_after_the_deadline_gets_408(
        server, connection):
    channel, client = connection
    channel.received(b"GET /v1/schedulingpolicies HTTP/1.1\r\nHost: x\r\nX")
    _age(channel, TIMEOUT + 1)
    server.maintenance(0)
    assert channel.close_when_flushed and not channel.readable()
    head, content = _answer(channel, client)
    assert head.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"Connection: close" in head
    assert content["error"]["code"] == 408
    assert client.recv(1) == b""


def test_a_slow_body_is_timed_from_the_request_first_byte(server,
                                                          connection):
    channel, _ = connection
    channel.received(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n{")
    _age(channel, TIMEOUT - 1)
    server.maintenance(0)
    assert not channel.close_when_flushed
    channel.received(b'"')
    _age(channel, 2)
    server.maintenance(0)
    assert channel.close_when_flushed


def test_a_request_within_the_deadline_stays(server, connection):
    channel, _ = connection
    channel.received(b"GET / HTTP/1.1\r\n")
    _age(channel, TIMEOUT - 1)
    server.maintenance(0)
    assert not channel.close_when_flushed and channel.readable()


def test_a_whole_request_and_a_quiet_connection_are_not_overdue(
        server, connection):
    channel, _ = connection
    assert not channel.overdue(1e12, TIMEOUT)
    channel.received(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert channel.request is None and len(server.task_dispatcher.tasks) == 1
    assert not channel.overdue(1e12, TIMEOUT)


def test_the_request_after_one_being_answered_waits_on_the_server(
        server, connection):
    channel, _ = connection
    channel.received(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\n")
    assert channel.requests and channel.request is not None
    _age(channel, TIMEOUT + 1)
    assert not channel.overdue(api_server.time.monotonic(), TIMEOUT)


def test_a_malformed_chunk_size_is_a_json_400(server, connection):
    channel, client = connection
    channel.received(b"POST / HTTP/1.1\r\nHost: x\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n")
    channel.service()
    head, content = _answer(channel, client)
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"Content-Type: application/json" in head
    assert content == {"error": {
        "code": 400, "title": "Bad Request",
        "message": "request body: Invalid chunk size"}}


def test_settings_follow_the_api_options():
    conf = cfg.ConfigOpts()
    api_conf.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    for name, value in (("threads", 3), ("idle_timeout", 7),
                        ("max_header_size", 4096),
                        ("connection_limit", 50)):
        conf.set_override(name, value, group="api")
    settings = api_server.settings(conf)
    assert settings["threads"] == 3
    assert settings["channel_timeout"] == 7
    assert settings["max_request_header_size"] == 4096
    assert settings["connection_limit"] == 50
    assert settings["max_request_body_size"] == body.MAX_BODY
    assert settings["asyncore_use_poll"] is True
    adjustments.Adjustments(**settings)


@pytest.mark.parametrize("soft, hard, connections, expected", [
    (1024, 4096, 1000, (1100, 4096)),
    (1024, 1050, 1000, (1050, 1050)),
    (1024, resource.RLIM_INFINITY, 2000,
     (2100, resource.RLIM_INFINITY)),
    (20000, 20000, 1000, None),
    (1024, 1024, 1000, None),
])
def test_the_open_files_limit_is_raised_to_fit_the_connections(
        monkeypatch, soft, hard, connections, expected):
    set_to = []
    monkeypatch.setattr(api_server.resource, "getrlimit",
                        lambda which: (soft, hard))
    monkeypatch.setattr(api_server.resource, "setrlimit",
                        lambda which, limits: set_to.append(limits))
    api_server.raise_file_limit(connections)
    assert set_to == ([] if expected is None else [expected])


def test_a_closing_connection_drops_what_the_client_still_sends(
        server, connection):
    channel, client = connection
    channel.received(b"POST / HTTP/1.1\r\nContent-Length: 9999999999\r\n\r\n")
    channel.service()
    head, content = _answer(channel, client)
    assert head.startswith(b"HTTP/1.1 413 ") and content["error"]["code"]
    assert channel.linger_until is not None and channel.readable()
    assert not channel.writable() and client.recv(1) == b""
    client.sendall(b"x" * 1000)
    channel.handle_read()
    assert channel.lingered == 1000 and channel in server._map.values()
    client.shutdown(socket.SHUT_WR)
    channel.handle_read()
    assert channel not in server._map.values()


def test_lingering_ends_at_its_deadline(server, connection):
    channel, _ = connection
    channel.handle_close()
    assert channel in server._map.values()
    channel.linger_until -= api_server.LINGER_SECONDS + 1
    server.maintenance(0)
    assert channel not in server._map.values()


def test_header_names_keep_the_application_spelling():
    head = (b"HTTP/1.1 200 OK\r\nEtag: \"1\"\r\nX-Openstack-Request-Id: a: b"
            b"\r\nServer: scheduler-api\r\n\r\n")
    names = {"Etag": "ETag",
             "X-Openstack-Request-Id": "X-OpenStack-Request-ID"}
    assert api_server.respell(head, names) == (
        b"HTTP/1.1 200 OK\r\nETag: \"1\"\r\nX-OpenStack-Request-ID: a: b"
        b"\r\nServer: scheduler-api\r\n\r\n")
