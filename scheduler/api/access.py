"""Who is calling and what they may do: the identity the auth
middleware left in the WSGI environment, the caller's permissions from
the database, and oslo.policy's verdict."""

import dataclasses
from collections.abc import Iterable
from collections.abc import Mapping

from oslo_config import cfg
from oslo_policy import policy
from sqlalchemy.orm import Session

from scheduler.api import errors
from scheduler.api import rules
from scheduler.db import permissions as permission_store

ALL_CLUSTERS = permission_store.ALL_CLUSTERS
#: Set by the noauth strategy: every caller is an admin.
NOAUTH_KEY = "scheduler.noauth"
#: Where the authentication middleware leaves the verified Identity. Not
#: an ``HTTP_`` key: no header a client sends can set it.
IDENTITY_KEY = "scheduler.identity"


@dataclasses.dataclass(frozen=True)
class Identity:
    """Who authentication verified the caller to be: the only identity
    access decisions read. ``roles`` and ``system_all`` come from a
    validated Keystone token (empty with http_basic, whose roles are the
    database's permissions alone); ``domain_id`` and ``domain_name`` are
    the Keystone user's domain (None with http_basic)."""

    user: str
    domain_id: str | None = None
    domain_name: str | None = None
    roles: frozenset[str] = frozenset()
    system_all: bool = False


def enforcer(conf: cfg.ConfigOpts) -> policy.Enforcer:
    enf = policy.Enforcer(conf)
    enf.register_defaults(rules.list_rules())
    return enf


@dataclasses.dataclass
class Access:
    """The caller and their roles; ``clusters`` are those they are
    cluster_admin of (``*``: all)."""

    user: str | None
    roles: set[str]
    clusters: set[str]
    enforcer: policy.Enforcer
    #: The user's domain as permissions and policies store it
    #: (``permissions.domain_key``): empty for htpasswd and the default.
    domain: str = permission_store.NO_DOMAIN

    @classmethod
    def of(cls, environ: Mapping, session: Session,
           enf: policy.Enforcer) -> "Access":
        if environ.get(NOAUTH_KEY):
            return cls("noauth", {"admin"}, {ALL_CLUSTERS}, enf)
        identity = environ.get(IDENTITY_KEY)
        if not isinstance(identity, Identity):
            return cls(None, set(), set(), enf)
        roles: set[str] = set()
        clusters: set[str] = set()
        # Keystone's admin counts only on a system-scoped token: a
        # project's admin is not the deployment's.
        if "admin" in identity.roles and identity.system_all:
            roles.add("admin")
        if identity.roles & {"reader", "member"}:
            roles.add("reader")
        domain = permission_store.domain_key(identity.domain_id)
        for row in permission_store.of_user(session, identity.user, domain):
            roles.add(row.role)
            if row.role == "cluster_admin":
                clusters.add(row.cluster)
        return cls(identity.user, roles, clusters, enf, domain)

    def manages(self, clusters: Iterable[str]) -> bool:
        """cluster_admin of every one of ``clusters``."""
        return ALL_CLUSTERS in self.clusters or set(clusters) <= self.clusters

    def allowed(self, rule: str, target: Mapping | None = None) -> bool:
        """Whether ``rule`` lets the caller do it (False without
        credentials): what the console offers."""
        if self.user is None:
            return False
        creds = {"user_id": self.user, "roles": sorted(self.roles)}
        return bool(self.enforcer.authorize(rule, dict(target or {}), creds))

    def authorize(self, rule: str, target: Mapping | None = None) -> None:
        """401 without credentials, 403 naming the rule when denied."""
        if self.user is None:
            raise errors.ApiError(401, "credentials required",
                                  {"WWW-Authenticate": 'Basic realm="'
                                   'scheduler-api"'})
        if not self.allowed(rule, target):
            raise errors.ApiError(
                403, f"{self.user} may not do this: rule {rule} "
                f"({self.enforcer.rules[rule]}) denied the roles "
                f"{', '.join(sorted(self.roles)) or 'none'}")


def flag(value: bool) -> str:
    """A target attribute for the rules' ``'True':%(name)s`` checks."""
    return "True" if value else "False"


