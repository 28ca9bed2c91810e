"""Routing (routes, as Nova and Placement) and the per-request frame:
one database transaction per request, committed only when the handler
returned, so that a denied or failed request changes nothing."""

import contextlib
import dataclasses
import json
import logging
import threading
from collections.abc import Callable

import routes
import webob
import webob.dec
from oslo_config import cfg
from oslo_policy import policy
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session
from sqlalchemy.orm import sessionmaker

from scheduler.api import access
from scheduler.api import errors
from scheduler.api import request_checks
from scheduler.db import api as db_api

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Context:
    request: webob.Request
    conf: cfg.ConfigOpts
    session: Session
    access: access.Access


@dataclasses.dataclass
class Reply:
    body: object = None
    status: int = 200
    etag: str | None = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    #: Of a body given as bytes (the console's files); else JSON.
    content_type: str = "application/json"


Handler = Callable[..., Reply]


class Router:
    """Maps (method, path) to handlers; 404/405 as JSON errors."""

    def __init__(self, conf: cfg.ConfigOpts, enforcer: policy.Enforcer):
        self.conf = conf
        self.enforcer = enforcer
        self.mapper = routes.Mapper()
        self.handlers: dict[str, dict[str, Handler]] = {}
        self._sessions: sessionmaker | None = None
        # SQLite: writers of this process take turns, so that a writer
        # reads what the previous one committed (its snapshot would
        # otherwise fail with "database is locked" instead of a 412).
        self._write_lock = threading.Lock()

    def add(self, path: str, method: str, handler: Handler) -> None:
        if path not in self.handlers:
            self.handlers[path] = {}
            self.mapper.connect(path, path, route_path=path)
        self.handlers[path][method] = handler

    def sessions(self) -> sessionmaker:
        if self._sessions is None:
            self._sessions = sessionmaker(bind=db_api.get_engine(self.conf),
                                          expire_on_commit=False)
        return self._sessions

    @webob.dec.wsgify
    def __call__(self, request: webob.Request) -> webob.Response:
        try:
            return self._dispatch(request)
        except errors.ApiError as e:
            return errors.error_response(e)
        except sa_exc.IntegrityError as e:
            # A concurrent request created the same row first.
            return errors.response(409, "a concurrent request changed this "
                                   f"resource first: {db_api.one_line(e)}")
        except sa_exc.SQLAlchemyError as e:
            LOG.error("%s %s failed on a database error: %s",
                      request.method, request_checks.loggable_path(request),
                      db_api.one_line(e))
            return errors.response(503, "the database failed: "
                                   f"{db_api.one_line(e)}")
        except Exception:
            LOG.exception("%s %s failed", request.method,
                          request_checks.loggable_path(request))
            return errors.response(500, "internal error; see the "
                                   "scheduler-api log")

    def _dispatch(self, request: webob.Request) -> webob.Response:
        # Not request.path_info: webob raises on bytes that are not UTF-8;
        # check_parameters refuses them naming the parameter.
        path = request_checks.raw_path(request.environ)
        match = self.mapper.match(path.rstrip("/") or "/")
        if match is None:
            raise errors.ApiError(404, "no resource "
                                  f"{request_checks.shown(path)}")
        methods = self.handlers[match.pop("route_path")]
        handler = methods.get(request.method)
        if handler is None:
            raise errors.ApiError(405, f"{request.method} is not allowed "
                                  f"here; allowed: {', '.join(methods)}",
                                  {"Allow": ", ".join(methods)})
        match.pop("controller", None)
        match.pop("action", None)
        request_checks.check_parameters(match)
        # Before the transaction: a refused body changes nothing.
        request_checks.check_content_type(request)
        serialise = (request.method not in ("GET", "HEAD")
                     and self.sessions().kw["bind"].dialect.name == "sqlite")
        with (self._write_lock if serialise else contextlib.nullcontext()), \
                self.sessions()() as session, session.begin():
            ctx = Context(request, self.conf, session, access.Access.of(
                request.environ, session, self.enforcer))
            reply = handler(ctx, **match)
            if reply.status >= 400:
                session.rollback()
        return self._response(request, reply)

    @staticmethod
    def _response(request: webob.Request, reply: Reply) -> webob.Response:
        response = webob.Response(status=reply.status, charset=None)
        if reply.body is not None:
            response.content_type = reply.content_type
            # bytes: JSON a handler keeps encoded (the cached list).
            response.body = (reply.body if isinstance(reply.body, bytes)
                             else json.dumps(reply.body).encode())
        elif reply.status == 200:
            response.status = 204
        if reply.etag is not None:
            response.headers["ETag"] = reply.etag
        for name, value in reply.headers.items():
            response.headers[name] = value
        if (request.method == "GET" and reply.etag is not None
                and request.headers.get("If-None-Match") == reply.etag):
            return webob.Response(status=304, headers={"ETag": reply.etag})
        return response
