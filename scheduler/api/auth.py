"""Authentication strategies ([api] auth_strategy): http_basic,
keystone and noauth, each wrapping the router as WSGI middleware.

Whatever the strategy, the identity headers that authentication owns
(X-Roles, X-User-*, OpenStack-System-Scope, ...) are removed from every
request first: access decisions read only the verified
``access.Identity`` the strategy leaves in the environment.
"""

import hashlib
import logging
import os
import threading
import time
from collections.abc import Mapping

import webob
import webob.dec
from oslo_config import cfg
from oslo_middleware import basic_auth

from scheduler import exception
from scheduler.api import access
from scheduler.api import errors
from scheduler.api import keystone
from scheduler.common.abridge import short
from scheduler.conf import api as api_conf

LOG = logging.getLogger(__name__)
_CHALLENGE = {"WWW-Authenticate": 'Basic realm="scheduler-api"'}

#: WSGI keys of the headers identity middleware sets (keystonemiddleware
#: and others in front of an OpenStack API): a client sending them must
#: not be believed, whether or not this strategy reads them.
_OWNED_PREFIXES = (
    "HTTP_X_ROLE", "HTTP_X_USER", "HTTP_X_PROJECT", "HTTP_X_TENANT",
    "HTTP_X_DOMAIN", "HTTP_X_DEFAULT_DOMAIN", "HTTP_X_IDENTITY_STATUS",
    "HTTP_X_SERVICE_", "HTTP_X_IS_ADMIN_PROJECT", "HTTP_X_SYSTEM_SCOPE",
    "HTTP_OPENSTACK_SYSTEM_SCOPE", "HTTP_X_TRUST", "HTTP_X_APP_CRED",
    "HTTP_X_REMOTE_", "HTTP_REMOTE_USER", "HTTP_X_AUTH_USER")
#: Credentials, not claims: the Keystone strategy validates them.
_CREDENTIAL_KEYS = frozenset({"HTTP_X_SERVICE_TOKEN"})
#: Longest user name of an htpasswd file (Apache's limit); longer ones
#: are refused before anything is looked up or logged.
MAX_USER_NAME = 255
#: At most one WARNING about spoofed identity headers this often.
STRIP_REPORT_SECONDS = 60


def owned_identity_keys(environ: dict) -> list[str]:
    """The environment keys of identity headers the client sent."""
    return [key for key in environ
            if key.startswith(_OWNED_PREFIXES)
            and key not in _CREDENTIAL_KEYS]


class StripIdentityHeaders:
    """Removes the identity headers authentication owns from every
    request before any strategy runs, and logs that a client sent them
    (the header names only, abridged: the values are the attacker's)."""

    def __init__(self, application):
        self.application = application
        self._lock = threading.Lock()
        self._spoofed = 0
        self._next_report = 0.0

    def __call__(self, environ, start_response):
        sent = owned_identity_keys(environ)
        for key in sent:
            del environ[key]
        if sent and self._report_due():
            LOG.warning("%s %s: ignored identity headers the client sent: "
                        "%s (%d such requests in the last %d s)",
                        environ.get("REQUEST_METHOD"),
                        short(environ.get("PATH_INFO", "")),
                        short(", ".join(sorted(sent))), self._spoofed,
                        STRIP_REPORT_SECONDS)
            self._spoofed = 0
        return self.application(environ, start_response)

    def _report_due(self) -> bool:
        """Counts a spoofing request; True for the first of each
        STRIP_REPORT_SECONDS: an attacker cannot fill the log."""
        with self._lock:
            self._spoofed += 1
            now = time.monotonic()
            if now < self._next_report:
                return False
            self._next_report = now + STRIP_REPORT_SECONDS
            return True


class _AbridgeNames(logging.Filter):
    """oslo.middleware logs the user name of each failed Basic login at
    INFO; the name is the client's, of any length: log it abridged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(short(a) if isinstance(a, str) else a
                                for a in record.args)
        return True


logging.getLogger(basic_auth.__name__).addFilter(_AbridgeNames())


class CachedBasicAuth:
    """oslo.middleware's htpasswd/bcrypt check, remembering credentials
    it verified while the file is unchanged: bcrypt costs tens of
    milliseconds by design, which every request would otherwise pay.
    Only a digest of the password is kept."""

    def __init__(self, application, auth_file: str):
        basic_auth.validate_auth_file(auth_file)
        self.application = application
        self.auth_file = auth_file
        self._verified: dict[bytes, tuple[tuple, Mapping]] = {}
        self._lock = threading.Lock()

    def _file_version(self) -> tuple:
        """Changes with every rewrite of the file, even within one tick
        of its modification time."""
        stat = os.stat(self.auth_file)
        return stat.st_mtime_ns, stat.st_size, stat.st_ino

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
            if len(username) > MAX_USER_NAME:
                raise ValueError("user name too long")
            name = username.encode()
            # Length-prefixed: no name and password pair reads as another.
            key = hashlib.sha256(len(name).to_bytes(4, "big") + name
                                 + password).digest()
            mtime = self._file_version()
            with self._lock:
                cached = self._verified.get(key)
            if cached is None or cached[0] != mtime:
                entry = basic_auth.authenticate(self.auth_file, username,
                                                password)
                with self._lock:
                    if len(self._verified) > 10000:
                        self._verified.clear()
                    self._verified[key] = (mtime, entry)
                cached = (mtime, entry)
            req.environ[access.IDENTITY_KEY] = access.Identity(
                cached[1]["HTTP_X_USER_NAME"])
        except Exception as e:  # every failure is a 401 (400: file)
            return self.format_exception(e)
        return req.get_response(self.application)


#: Names a browser on this machine uses for a loopback server.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def host_name(header: str) -> str:
    """The name of a Host header, without its port, lowercased:
    ``[::1]:8795`` -> ``[::1]``."""
    name = header.strip().lower()
    if name.startswith("["):
        return name.partition("]")[0] + "]"
    return name.partition(":")[0]


class NoAuth:
    """Every caller is an admin (loopback only, see conf.api). A request
    whose Host header names another server is refused (400): a web page
    whose name was made to resolve to 127.0.0.1 (DNS rebinding) would
    otherwise reach the API as an admin from the user's browser."""

    def __init__(self, application, configured_host: str):
        self.application = application
        named = (f"[{configured_host}]" if ":" in configured_host
                 else configured_host)
        self.names = frozenset((*LOOPBACK_NAMES, named.lower()))

    def __call__(self, environ, start_response):
        sent = environ.get("HTTP_HOST", "")
        if host_name(sent) not in self.names:
            refused = errors.response(400, (
                f"Host header: {short(sent)} is not this server's address "
                f"(auth_strategy noauth answers only "
                f"{', '.join(sorted(self.names))}, with any port)"))
            return refused(environ, start_response)
        environ[access.NOAUTH_KEY] = True
        return self.application(environ, start_response)


def wrap(application, conf: cfg.ConfigOpts):
    """``application`` behind the configured strategy; ConfigError for an
    unusable one (missing htpasswd file, noauth off loopback)."""
    strategy = conf.api.auth_strategy
    api_conf.validate(conf)
    if strategy == api_conf.NOAUTH:
        return NoAuth(application, conf.api.host)
    if strategy == api_conf.KEYSTONE:
        return keystone.protect(application, conf)
    path = conf.oslo_middleware.http_basic_auth_user_file
    problem = htpasswd_problem(path)
    if problem is None:
        try:
            return CachedBasicAuth(application, path)
        except Exception as e:  # oslo.middleware's ConfigInvalid and others
            problem = f"expected a readable htpasswd file of bcrypt " \
                f"entries (htpasswd -B): {e}"
    raise exception.ConfigError("oslo_middleware",
                                "http_basic_auth_user_file", path, problem)


#: How bcrypt hashes start, the only ones oslo.middleware accepts.
_BCRYPT_PREFIXES = ("$2y$", "$2a$", "$2b$")
#: For the newcomer who started scheduler-api with the default strategy.
TRIAL_HINT = ("for a trial on this machine without authentication, run "
              "'scheduler-manage --config-file examples/api/noauth.conf db "
              "sync', then start with --config-file examples/api/noauth.conf")


def htpasswd_problem(path: str) -> str | None:
    """Why the htpasswd file at ``path`` cannot serve, in words for the
    error line, or None. oslo.middleware's own message for it is a
    literal 'Invalid configuration file. %(error_msg)s'."""
    try:
        with open(path, encoding="utf-8") as htpasswd:
            lines = htpasswd.read().splitlines()
    except FileNotFoundError:
        return (f"no such file; create it with 'htpasswd -c -B {path} "
                f"USER' (docs/api.md), or {TRIAL_HINT}")
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) else "not UTF-8"
        return f"cannot read it ({reason}); {TRIAL_HINT}"
    for number, line in enumerate(lines, 1):
        # Lines without a colon are skipped by oslo.middleware too.
        user, colon, hashed = line.strip().partition(":")
        if colon and not hashed.startswith(_BCRYPT_PREFIXES):
            return (f"line {number} (user {short(user, 40)}) is not a "
                    "bcrypt hash; expected entries of 'htpasswd -B'")
    return None
