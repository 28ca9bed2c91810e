"""The HTTP server of ``scheduler-api`` when run directly: waitress, with
a deadline for reading each request.

waitress reads requests in one asynchronous loop and hands a worker
thread ([api] threads) only a request whose headers and body are whole,
so slow clients hold a socket, never a thread. What it lacks is a bound
on the time a request may take to arrive: its channel timeout is one of
inactivity, which a client sending a byte a second never reaches. The
server here adds it: a connection whose current request began more than
[api] request_timeout seconds ago and is still not whole is answered 408
and closed. [api] idle_timeout closes silent connections,
max_header_size caps the request line and headers (431) and
connection_limit the open connections; bodies are capped at the API's
own limit (413), and waitress's own error answers (431, 413, 400 for a
malformed chunked body) are JSON like the API's.
"""

import http
import json
import resource
import signal
import socket
import time

from oslo_config import cfg
from oslo_log import log as logging
from waitress import adjustments
from waitress import channel
from waitress import parser
from waitress import server
from waitress import task
from waitress import utilities

from scheduler.api import body

LOG = logging.getLogger(__name__)
IDENT = "scheduler-api"
#: How often (seconds) connections are checked against the deadlines;
#: a late request is cut at most this much after request_timeout.
CHECK_INTERVAL = 1
#: Open files besides the connections: database, logs, libraries.
SPARE_FILES = 100
#: When the server closes a connection the client may still be sending
#: on (an oversize body refused after its headers, a timeout), it first
#: reads and drops what comes for this long and at most this much: a
#: connection closed with data unread is reset, and a reset can reach the
#: client before the answer it was sent.
LINGER_SECONDS = 3
LINGER_BYTES = 4 * body.MAX_BODY
LINGER_READ = 65536
REQUEST_TIMEOUT_ANSWER = (
    b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n"
    b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s")


def error_json(code: int, message: str) -> bytes:
    """The API's error body (scheduler.api.errors) for an answer the
    server gives itself, before the application."""
    title = http.HTTPStatus(code).phrase
    return json.dumps({"error": {"code": code, "title": title,
                                 "message": message}}).encode()


class TimedRequestParser(parser.HTTPRequestParser):
    """waitress's parser, noting when the request's first byte came: the
    channel makes one when a request's first bytes arrive."""

    def __init__(self, adj: adjustments.Adjustments) -> None:
        super().__init__(adj)
        self.started = time.monotonic()


def refused_part(request: parser.HTTPRequestParser) -> str:
    """What part of ``request`` waitress refused, named as the API's
    errors name a field."""
    if isinstance(request.error, utilities.RequestEntityTooLarge):
        return "request body"
    if isinstance(request.error, utilities.RequestHeaderFieldsTooLarge):
        return "request headers"
    return "request body" if request.headers_finished else "request"


class JsonErrorTask(task.ErrorTask):
    """waitress's answer to a request it cannot parse or refuses (431,
    413, 400), with the API's JSON error body instead of plain text."""

    def execute(self) -> None:
        error = self.request.error
        content = error_json(error.code, f"{refused_part(self.request)}: "
                             f"{error.body}")
        self.status = f"{error.code} {error.reason}"
        self.response_headers.append(("Content-Type", "application/json"))
        self.set_close_on_finish()
        self.content_length = len(content)
        self.write(content)


def _normalised(name: str) -> str:
    # waitress's spelling of a header name (build_response_header).
    return "-".join(part.capitalize() for part in name.split("-"))


def respell(head: bytes, names: dict[str, str]) -> bytes:
    """The response head ``head`` with header names spelled as in
    ``names`` (waitress's spelling -> the application's)."""
    lines = head.split(b"\r\n")
    for number, line in enumerate(lines[1:], 1):
        name, colon, value = line.partition(b": ")
        spelled = names.get(name.decode("latin-1"))
        if colon and spelled is not None:
            lines[number] = spelled.encode("latin-1") + colon + value
    return b"\r\n".join(lines)


class SpellingTask(task.WSGITask):
    """waitress's WSGI task, keeping the application's spelling of header
    names (``ETag``, ``X-OpenStack-Request-ID``) where waitress would
    write ``Etag``: clients reading them case-sensitively, wrongly but
    commonly, see what other servers send them."""

    def build_response_header(self) -> bytes:
        names = {_normalised(name): name for name, _ in self.response_headers}
        return respell(super().build_response_header(), names)


class DeadlineChannel(channel.HTTPChannel):
    """A connection whose request in progress can be timed out."""

    task_class = SpellingTask
    parser_class = TimedRequestParser
    error_task_class = JsonErrorTask

    def overdue(self, now: float, request_timeout: float) -> bool:
        """Whether a request is still arriving request_timeout seconds
        after its first byte (``now`` from time.monotonic())."""
        request = self.request
        if request is None or request.completed:
            return False
        with self.requests_lock:
            # A request being answered keeps its connection from being
            # read (no pipelining): the one after it waits on the server,
            # not on the client.
            if self.requests:
                return False
        return now - request.started > request_timeout

    def time_out(self) -> None:
        """Answer 408 and close the connection once that is sent.

        Runs in the server's loop with no request being answered, so the
        output buffer is free, as waitress's own 100 Continue does."""
        content = error_json(408, "request not received in time")
        answer = REQUEST_TIMEOUT_ANSWER % (len(content), content)
        with self.outbuf_lock:
            self.outbufs[-1].append(answer)
            self.current_outbuf_count += len(answer)
            self.total_outbufs_len += len(answer)
        self.request = None
        self.close_when_flushed = True

    linger_until: float | None = None
    lingered = 0

    def handle_close(self) -> None:
        """Close; if the server is the one closing, stop sending, then
        linger (LINGER_SECONDS) until the client closes too."""
        if self.linger_until is not None or not self.connected:
            super().handle_close()
            return
        try:
            self.socket.shutdown(socket.SHUT_WR)
        except OSError:
            super().handle_close()
            return
        self.linger_until = time.monotonic() + LINGER_SECONDS

    def lingered_out(self, now: float) -> bool:
        """Whether lingering is over (``now`` from time.monotonic())."""
        return self.linger_until is not None and now > self.linger_until

    def readable(self) -> bool:
        return self.linger_until is not None or super().readable()

    def writable(self) -> bool:
        return self.linger_until is None and super().writable()

    def handle_read(self) -> None:
        if self.linger_until is None:
            super().handle_read()
            return
        try:
            dropped = len(self.socket.recv(LINGER_READ))
        except BlockingIOError:
            return
        except OSError:
            dropped = 0
        self.lingered += dropped
        if not dropped or self.lingered > LINGER_BYTES:
            super().handle_close()


class DeadlineServer(server.TcpWSGIServer):
    """waitress's TCP server, cutting requests that arrive too slowly."""

    channel_class = DeadlineChannel

    def __init__(self, application, request_timeout: float,
                 **kwargs) -> None:
        self.request_timeout = request_timeout
        super().__init__(application, **kwargs)

    def maintenance(self, now: float) -> None:
        """waitress's idle check ([api] idle_timeout), then the deadline
        of [api] request_timeout."""
        super().maintenance(now)
        clock = time.monotonic()
        late = [c for c in self.active_channels.values()
                if c.overdue(clock, self.request_timeout)]
        for done in [c for c in self.active_channels.values()
                     if c.lingered_out(clock)]:
            channel.HTTPChannel.handle_close(done)
        for late_channel in late:
            LOG.info("Request from %s not received in %d s: answered 408",
                     late_channel.addr[0] if late_channel.addr else "?",
                     self.request_timeout)
            late_channel.time_out()


def settings(conf: cfg.ConfigOpts) -> dict:
    """waitress's adjustments from the [api] options."""
    opts = conf.api
    return {
        "host": opts.host,
        "port": opts.port,
        "threads": opts.threads,
        "connection_limit": opts.connection_limit,
        "channel_timeout": opts.idle_timeout,
        "cleanup_interval": CHECK_INTERVAL,
        "max_request_header_size": opts.max_header_size,
        # One limit, the API's: a larger body is refused before it is
        # read, by the server as by the application behind another one.
        "max_request_body_size": body.MAX_BODY,
        # poll(), not select(): select() cannot watch descriptors past
        # 1024, fewer than connection_limit allows.
        "asyncore_use_poll": True,
        # A client resetting its connection is not the server's fault;
        # its traceback in the log would let anyone fill the log.
        "log_socket_errors": False,
        "ident": IDENT,
    }


def raise_file_limit(connections: int) -> None:
    """Raise the soft limit on open files to hold ``connections`` (from
    [api] connection_limit) and SPARE_FILES more, up to the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + SPARE_FILES
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if target < wanted:
        LOG.warning("Open files limited to %d: fewer connections than "
                    "[api] connection_limit %d can be held", target,
                    connections)


def make_server(application, conf: cfg.ConfigOpts) -> DeadlineServer:
    """A listening server for ``application`` on [api] host and port;
    OSError when it cannot listen. The first address of host is used."""
    adj = adjustments.Adjustments(**settings(conf))
    raise_file_limit(adj.connection_limit)
    dispatcher = task.ThreadedTaskDispatcher()
    dispatcher.set_thread_count(adj.threads)
    return DeadlineServer(application, conf.api.request_timeout, map={},
                          dispatcher=dispatcher, adj=adj,
                          sockinfo=adj.listen[0])


def _stop(signum: int, _frame) -> None:
    LOG.info("Signal %d: stopping", signum)
    # waitress's run() ends on SystemExit raised in its (the main)
    # thread, giving requests in progress a few seconds to finish.
    raise SystemExit(0)


def serve(listening: DeadlineServer) -> None:
    """Serve until SIGTERM or SIGINT."""
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        listening.run()
    finally:
        listening.close()
