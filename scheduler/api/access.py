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

    @classmethod
    def of(cls, environ: Mapping, session: Session,
           enf: policy.Enforcer) -> "Access":
        if environ.get(NOAUTH_KEY):
            return cls("noauth", {"admin"}, {ALL_CLUSTERS}, enf)
        user = environ.get("HTTP_X_USER_NAME") or environ.get("HTTP_X_USER")
        roles: set[str] = set()
        clusters: set[str] = set()
        if user is None:
            return cls(None, roles, clusters, enf)
        keystone_roles = {r.strip() for r in
                          environ.get("HTTP_X_ROLES", "").split(",")}
        # keystonemiddleware's OpenStack-System-Scope header.
        if "admin" in keystone_roles and environ.get(
                "HTTP_OPENSTACK_SYSTEM_SCOPE") == "all":
            roles.add("admin")
        if keystone_roles & {"reader", "member"}:
            roles.add("reader")
        for row in permission_store.of_user(session, user):
            roles.add(row.role)
            if row.role == "cluster_admin":
                clusters.add(row.cluster)
        return cls(user, roles, clusters, enf)

    def manages(self, clusters: Iterable[str]) -> bool:
        """cluster_admin of every one of ``clusters``."""
        return ALL_CLUSTERS in self.clusters or set(clusters) <= self.clusters

    def authorize(self, rule: str, target: Mapping | None = None) -> None:
        """401 without credentials, 403 naming the rule when denied."""
        if self.user is None:
            raise errors.ApiError(401, "credentials required",
                                  {"WWW-Authenticate": 'Basic realm="'
                                   'scheduler-api"'})
        creds = {"user_id": self.user, "roles": sorted(self.roles)}
        if not self.enforcer.authorize(rule, dict(target or {}), creds):
            raise errors.ApiError(
                403, f"{self.user} may not do this: rule {rule} "
                f"({self.enforcer.rules[rule]}) denied the roles "
                f"{', '.join(sorted(self.roles)) or 'none'}")


def flag(value: bool) -> str:
    """A target attribute for the rules' ``'True':%(name)s`` checks."""
    return "True" if value else "False"


