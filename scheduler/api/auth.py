"""Authentication strategies ([api] auth_strategy): http_basic,
keystone and noauth, each wrapping the router as WSGI middleware."""

import hashlib
import os
import threading

import webob
import webob.dec
from keystonemiddleware import auth_token
from oslo_config import cfg
from oslo_middleware import basic_auth

from scheduler import exception
from scheduler.api import access
from scheduler.api import errors
from scheduler.conf import api as api_conf

_CHALLENGE = {"WWW-Authenticate": 'Basic realm="scheduler-api"'}


class CachedBasicAuth(basic_auth.BasicAuthMiddleware):
    """oslo.middleware's htpasswd/bcrypt check, remembering credentials
    it verified while the file is unchanged: bcrypt costs tens of
    milliseconds by design, which every request would otherwise pay.
    Only a digest of the password is kept."""

    def __init__(self, application, conf=None):
        super().__init__(application, conf)
        self._verified: dict[bytes, tuple[float, dict]] = {}
        self._lock = threading.Lock()

    def format_exception(self, e: Exception) -> webob.Response:
        if isinstance(e, webob.exc.HTTPBadRequest):
            return errors.response(400, f"Authorization: {e.detail or e}")
        return errors.response(401, "credentials required: valid HTTP "
                               "basic credentials of the htpasswd file",
                               _CHALLENGE)

    @webob.dec.wsgify
    def __call__(self, req: webob.Request) -> webob.Response:
        try:
            token = basic_auth.parse_header(req.environ)
            username, password = basic_auth.parse_token(token)
            key = hashlib.sha256(username.encode() + b"\0" + password
                                 ).digest()
            mtime = os.stat(self.auth_file).st_mtime
            with self._lock:
                cached = self._verified.get(key)
            if cached is None or cached[0] != mtime:
                entry = basic_auth.authenticate(self.auth_file, username,
                                                password)
                with self._lock:
                    if len(self._verified) > 10000:
                        self._verified.clear()
                    self._verified[key] = (mtime, dict(entry))
                cached = (mtime, dict(entry))
            req.environ.update(cached[1])
        except Exception as e:  # every failure is a 401 (400: file)
            return self.format_exception(e)
        return req.get_response(self.application)


class NoAuth:
    """Every caller is an admin (loopback only, see conf.api)."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        environ[access.NOAUTH_KEY] = True
        return self.application(environ, start_response)


def _keystone(application, conf: cfg.ConfigOpts):
    return auth_token.AuthProtocol(application, {"oslo_config_config": conf})


def wrap(application, conf: cfg.ConfigOpts):
    """``application`` behind the configured strategy; ConfigError for an
    unusable one (missing htpasswd file, noauth off loopback)."""
    strategy = conf.api.auth_strategy
    api_conf.validate(conf)
    if strategy == api_conf.NOAUTH:
        return NoAuth(application)
    if strategy == api_conf.KEYSTONE:
        return _keystone(application, conf)
    path = conf.oslo_middleware.http_basic_auth_user_file
    try:
        return CachedBasicAuth(application)
    except Exception as e:  # oslo.middleware's ConfigInvalid and others
        raise exception.ConfigError(
            "oslo_middleware", "http_basic_auth_user_file", path,
            f"expected a readable htpasswd file of bcrypt entries "
            f"(htpasswd -B): {e}") from None
