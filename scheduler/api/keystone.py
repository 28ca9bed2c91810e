"""The keystone strategy: keystonemiddleware's auth_token validates the
token; around it, tokens that cannot be valid are refused without asking
Keystone, and a catalog without the configured identity endpoint is a
401 and one log line, not a traceback."""

import logging
import re

from keystoneauth1 import exceptions as ksa_exceptions
from keystonemiddleware import auth_token
from oslo_config import cfg

from scheduler.api import access
from scheduler.api import errors

LOG = logging.getLogger(__name__)

#: keystonemiddleware's environment key of the validated token's plugin.
TOKEN_AUTH_KEY = "keystone.token_auth"
IDENTITY_STATUS_KEY = "HTTP_X_IDENTITY_STATUS"
#: Fernet tokens are about 200 characters, JWS tokens under 1,000. A
#: longer header is refused here: Keystone's own front server may answer
#: it with a 400, which keystonemiddleware reports as Keystone down (503).
MAX_TOKEN_LENGTH = 4096
#: Base64 (either alphabet) and the dots of a JWS: every token format
#: Keystone issues.
_TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]+")
_TOKEN_KEYS = ("HTTP_X_AUTH_TOKEN", "HTTP_X_STORAGE_TOKEN",
               "HTTP_X_SERVICE_TOKEN")
_CHALLENGE = "Keystone uri=\"{}\""


class KeystoneIdentity:
    """Behind auth_token: the identity of the validated user token
    (``keystone.token_auth``, an object no header can forge), its roles,
    its user's domain and whether it is scoped to the whole system."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        plugin = environ.get(TOKEN_AUTH_KEY)
        # auth_token leaves the plugin of a token it then refused
        # (expired in its cache, bind, access rules) and, with
        # delay_auth_decision, passes the request on marked Invalid. The
        # status is auth_token's own: the client's copy was removed.
        confirmed = environ.get(IDENTITY_STATUS_KEY) == "Confirmed"
        if confirmed and plugin is not None and plugin.has_user_token:
            user = plugin.user
            environ[access.IDENTITY_KEY] = access.Identity(
                user.username, user.user_domain_id, user.user_domain_name,
                frozenset(user.role_names), bool(user.system_scoped))
        return self.application(environ, start_response)


class TokenGuard:
    """In front of auth_token: a malformed or oversized token is a 401
    at once; an identity endpoint missing from Keystone's catalog
    (``[keystone_authtoken] interface``) is a 401 and an ERROR line."""

    def __init__(self, application, conf: cfg.ConfigOpts):
        self.application = application
        self.interface = conf.keystone_authtoken.interface
        self.challenge = {"WWW-Authenticate": _CHALLENGE.format(
            conf.keystone_authtoken.www_authenticate_uri or "")}

    def __call__(self, environ, start_response):
        for key in _TOKEN_KEYS:
            token = environ.get(key)
            if token is not None and not _plausible(token):
                return self._refuse(environ, start_response,
                                    "the token is malformed")
        try:
            return self.application(environ, start_response)
        except ksa_exceptions.EndpointNotFound as e:
            LOG.error("cannot validate tokens: Keystone's catalog has no "
                      "identity endpoint of [keystone_authtoken] interface "
                      "%s (%s); set interface to one it has (public, "
                      "internal, admin)", self.interface, e)
            return self._refuse(environ, start_response,
                                "the token could not be validated")

    def _refuse(self, environ, start_response, why: str):
        response = errors.response(401, f"X-Auth-Token: {why}",
                                   self.challenge)
        return response(environ, start_response)


def _plausible(token: str) -> bool:
    return len(token) <= MAX_TOKEN_LENGTH and bool(_TOKEN.fullmatch(token))


def protect(application, conf: cfg.ConfigOpts):
    """``application`` behind Keystone token validation."""
    validated = auth_token.AuthProtocol(KeystoneIdentity(application),
                                        {"oslo_config_config": conf})
    return TokenGuard(validated, conf)
