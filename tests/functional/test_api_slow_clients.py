"""scheduler-api against slow and malformed clients, as a real process
on loopback: idle and dribbling sockets neither stall /healthcheck nor
authenticated requests, a dribbler is cut at [api] request_timeout,
oversize headers get 431 unserved, a malformed chunked body gets 400;
on SQLite, PostgreSQL and MariaDB."""

import contextlib
import dataclasses
import http.client
import select
import socket
import statistics
import threading
import time

import pytest

from tests.functional import api_server

#: Short enough for a quick test, long enough to be told from "at once".
REQUEST_TIMEOUT = 3
IDLE = 100
DRIBBLING = 100
#: One byte per dribbler every this many seconds: never idle for long,
#: never done.
DRIBBLE_INTERVAL = 0.5
#: The loops' bound: every dribbler is cut long before it.
DRIBBLE_FOR = REQUEST_TIMEOUT + 12
#: How late after request_timeout a cut may come: the server checks its
#: connections every second; the rest is a busy 2-core CI machine.
CUT_SLACK = 4
#: "Promptly": far below the seconds a stalled server takes, far above
#: what a busy CI machine adds to a few milliseconds.
PROMPT = 2.0
HEADER_TEXT = (b"GET /v1/schedulingpolicies HTTP/1.1\r\nHost: x\r\n"
               + b"X-Slow: " + b"a" * 4000)
AUTHORIZATION = api_server.basic_authorization()
BODY_HEAD = (b"POST /v1/schedulingpolicies HTTP/1.1\r\nHost: x\r\n"
             b"Content-Type: application/json\r\nContent-Length: 4000\r\n"
             b"\r\n")


@pytest.fixture
def api(tmp_path, write_config, start_console_script, db_url):
    api_server.sync(db_url)
    api_server.grant_matrix_permissions(db_url)
    return api_server.start(
        tmp_path, write_config, start_console_script, db_url,
        extra={"api": {"request_timeout": REQUEST_TIMEOUT,
                       "idle_timeout": 60}})


@dataclasses.dataclass
class Dribbler:
    sock: socket.socket
    text: bytes
    sent: int = 0
    cut_after: float | None = None
    answer: bytes = b""


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def _cut(dribbler: Dribbler) -> bool:
    """Whether the server answered or closed; reads what it sent."""
    readable, _, _ = select.select([dribbler.sock], [], [], 0)
    if not readable:
        return False
    with contextlib.suppress(OSError):
        dribbler.answer = dribbler.sock.recv(4096)
    return True


def _dribble(dribblers: list[Dribbler], started: float,
             stop: threading.Event) -> None:
    """One byte per live dribbler each DRIBBLE_INTERVAL, until every one
    is cut, stop is set or DRIBBLE_FOR has passed."""
    while not stop.is_set() and time.monotonic() - started < DRIBBLE_FOR:
        live = [d for d in dribblers if d.cut_after is None]
        if not live:
            return
        for dribbler in live:
            if not _cut(dribbler):
                try:
                    dribbler.sock.send(
                        dribbler.text[dribbler.sent:dribbler.sent + 1])
                    dribbler.sent += 1
                    continue
                except OSError:
                    pass
            dribbler.cut_after = time.monotonic() - started
        stop.wait(DRIBBLE_INTERVAL)


def _timed_get(port: int, path: str, user: bool) -> tuple[float, int]:
    """Seconds and status of one GET on a connection of its own; status
    0 when it took over 10 s or failed."""
    headers = {"Authorization": AUTHORIZATION} if user else {}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    began = time.monotonic()
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        response.read()
        status = response.status
    except OSError:
        status = 0
    finally:
        connection.close()
    return time.monotonic() - began, status


def test_slow_clients_neither_stall_others_nor_stay(api):
    idle = [_connect(api.port) for _ in range(IDLE)]
    dribblers = [Dribbler(_connect(api.port),
                          HEADER_TEXT if n % 2 else BODY_HEAD + b"{" * 4000)
                 for n in range(DRIBBLING)]
    # The body dribblers start with their headers whole: their body is
    # what comes slowly.
    for dribbler in dribblers:
        if dribbler.text.startswith(BODY_HEAD):
            dribbler.sock.sendall(BODY_HEAD)
            dribbler.sent = len(BODY_HEAD)
    stop = threading.Event()
    started = time.monotonic()
    thread = threading.Thread(target=_dribble,
                              args=(dribblers, started, stop))
    thread.start()
    try:
        timings = []
        while time.monotonic() - started < REQUEST_TIMEOUT - 0.5:
            timings.append(_timed_get(api.port, "/healthcheck", False))
            timings.append(_timed_get(api.port, "/v1/schedulingpolicies",
                                      True))
        thread.join(DRIBBLE_FOR + 5)
    finally:
        stop.set()
        thread.join()
        for sock in idle + [d.sock for d in dribblers]:
            sock.close()
    seconds = [t for t, _ in timings]
    print(f"{len(timings)} requests, median {statistics.median(seconds):.3f}"
          f" s, max {max(seconds):.3f} s")
    assert {status for _, status in timings} == {200}, timings
    assert max(seconds) < PROMPT, timings
    cuts = sorted(d.cut_after or DRIBBLE_FOR for d in dribblers)
    print(f"dribblers cut after {cuts[0]:.1f} to {cuts[-1]:.1f} s")
    assert cuts[0] >= REQUEST_TIMEOUT - 0.5, cuts
    assert cuts[-1] <= REQUEST_TIMEOUT + CUT_SLACK, cuts
    answers = {d.answer.split(b"\r\n", 1)[0] for d in dribblers}
    assert answers <= {b"HTTP/1.1 408 Request Timeout", b""}, answers


def _exchange(port: int, request: bytes) -> bytes:
    """Send request (the server may stop reading it) and read the answer
    until the server closes."""
    with _connect(port) as sock:
        sock.settimeout(10)
        with contextlib.suppress(OSError):
            sock.sendall(request)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except OSError:
            pass
    return answer


def test_oversize_headers_are_431_and_not_served(api):
    body = b'{"name": "big-header"}'
    request = (b"POST /v1/schedulingpolicies HTTP/1.1\r\nHost: x\r\n"
               + f"Authorization: {AUTHORIZATION}\r\n".encode()
               + b"Content-Type: application/json\r\n"
               + f"Content-Length: {len(body)}\r\n".encode()
               + b"X-Big: " + b"a" * (64 * 1024) + b"\r\n\r\n" + body)
    answer = _exchange(api.port, request)
    # HTTP/1.0: the server answers before it has read the request's
    # version.
    assert answer.startswith(b"HTTP/1.0 431 "), answer[:200]
    assert b'"code": 431' in answer
    listed = api.get("/v1/schedulingpolicies").body["schedulingpolicies"]
    assert "big-header" not in {policy["name"] for policy in listed}


def test_eight_mib_header_is_refused_early(api):
    request = (b"GET /healthcheck HTTP/1.1\r\nHost: x\r\nX-Big: "
               + b"a" * (8 << 20) + b"\r\n\r\n")
    answer = _exchange(api.port, request)
    # The server stops reading at [api] max_header_size and closes: the
    # client may see the 431 or, still sending, a reset.
    assert answer == b"" or answer.startswith(b"HTTP/1.0 431 "), answer
    assert api.get("/healthcheck", user=None).status == 200


def test_malformed_chunked_body_is_400_without_traceback(api):
    request = (b"POST /v1/schedulingpolicies HTTP/1.1\r\nHost: x\r\n"
               + f"Authorization: {AUTHORIZATION}\r\n".encode()
               + b"Content-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
    answer = _exchange(api.port, request)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request"), answer[:300]
    assert b"application/json" in answer
    assert api.get("/healthcheck", user=None).status == 200
    assert "Traceback" not in api.process.stderr
