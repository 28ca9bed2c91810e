"""The WSGI application: healthcheck, then the public paths, then the
authenticated router."""

from oslo_config import cfg
from oslo_middleware import healthcheck

from scheduler.api import access
from scheduler.api import auth
from scheduler.api import caller
from scheduler.api import clusters
from scheduler.api import console
from scheduler.api import explain
from scheduler.api import hosts
from scheduler.api import permissions
from scheduler.api import policies
from scheduler.api import units
from scheduler.api import versions
from scheduler.api.router import Router

#: Answered without credentials: version discovery and the API document.
PUBLIC_PATHS = ("/", "/v1", "/v1/openapi.json")


def router(conf: cfg.ConfigOpts) -> Router:
    routes = Router(conf, access.enforcer(conf))
    for module in (versions, units, policies, clusters, permissions, hosts,
                   explain, caller, console):
        module.register(routes)
    return routes


HEALTHCHECK = "/healthcheck"


class _Dispatch:
    """/healthcheck to oslo.middleware's, public paths to the router,
    everything else through authentication first."""

    def __init__(self, health, public, protected):
        self.health = health
        self.public = public
        self.protected = protected

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "").rstrip("/") or "/"
        if path == HEALTHCHECK:
            target = self.health
        elif path in PUBLIC_PATHS:
            target = self.public
        else:
            target = self.protected
        return target(environ, start_response)


def make_app(conf: cfg.ConfigOpts):
    """ConfigError for an unusable auth configuration."""
    routes = router(conf)
    # As an application (no wrapped app) it answers every request it
    # gets, which the dispatch limits to /healthcheck.
    health = healthcheck.Healthcheck(None, {})
    return auth.StripIdentityHeaders(
        _Dispatch(health, routes, auth.wrap(routes, conf)))
