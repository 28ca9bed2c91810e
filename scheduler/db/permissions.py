"""Permissions: a user's role on one cluster or on all (``*``), shared
by the REST API and ``scheduler-manage permission``."""

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from scheduler.db import models
from scheduler.db.roles import ALL_CLUSTERS
from scheduler.db.roles import ROLES


class InvalidPermission(ValueError):
    """A permission that cannot be granted, with why (names the field)."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


#: The Keystone domain every grant without a domain is for.
DEFAULT_DOMAIN_ID = "default"
NO_DOMAIN = ""
_MAX_DOMAIN = 64


def _name(field: str, value: object, max_length: int, expected: str) -> None:
    """A name every database stores as sent: no NUL, no lone surrogate
    (not UTF-8), no control character (they hide in listings)."""
    if (not isinstance(value, str) or not value.strip()
            or len(value) > max_length
            or any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF
                   or ord(c) == 127 for c in value)):
        raise InvalidPermission(field, expected)


def check(user: object, role: object, cluster: object,
          domain: object = NO_DOMAIN) -> None:
    _name("user", user, 255, "expected a non-empty string of at most 255 "
          "printable characters")
    if role not in ROLES:
        raise InvalidPermission("role", f"expected one of {', '.join(ROLES)}")
    _name("cluster", cluster, 255, "expected a cluster name of at most 255 "
          "printable characters, or *")
    if domain != NO_DOMAIN:
        _name("domain", domain, _MAX_DOMAIN, "expected a Keystone domain "
              f"id of at most {_MAX_DOMAIN} printable characters, or null")
    if role == "admin" and cluster != ALL_CLUSTERS:
        raise InvalidPermission("cluster", "admin is system-wide: expected *")


def domain_key(domain_id: str | None) -> str:
    """What ``user_domain`` holds for a user of Keystone domain
    ``domain_id``: nothing for the default domain, as for an htpasswd
    user (None)."""
    return NO_DOMAIN if domain_id in (None, DEFAULT_DOMAIN_ID) else domain_id


def of_user(session: Session, user: str,
            domain: str = NO_DOMAIN) -> Sequence[models.Permission]:
    """The grants of ``user`` of ``domain`` (a ``domain_key``)."""
    return session.scalars(sa.select(models.Permission).where(
        models.Permission.user_name == user,
        models.Permission.user_domain == domain)).all()


def list_all(session: Session) -> Sequence[models.Permission]:
    return session.scalars(sa.select(models.Permission).order_by(
        models.Permission.user_name, models.Permission.user_domain,
        models.Permission.role, models.Permission.cluster)).all()


def add(session: Session, user: str, role: str,
        cluster: str = ALL_CLUSTERS,
        domain: str | None = None) -> models.Permission:
    """Grant; raises InvalidPermission for bad values and LookupError with
    the existing id for a duplicate. ``domain``: a Keystone domain id
    (None or the default domain's: none)."""
    check(user, role, cluster, NO_DOMAIN if domain is None else domain)
    domain = domain_key(domain or None)
    existing = session.scalars(sa.select(models.Permission).where(
        models.Permission.user_name == user,
        models.Permission.user_domain == domain,
        models.Permission.role == role,
        models.Permission.cluster == cluster)).first()
    if existing is not None:
        raise LookupError(existing.id)
    row = models.Permission(id=str(uuid.uuid4()), user_name=user,
                            user_domain=domain, role=role, cluster=cluster,
                            created_at=models.utcnow())
    session.add(row)
    session.flush()
    return row


def remove(session: Session, permission_id: str) -> bool:
    result = session.execute(sa.delete(models.Permission).where(
        models.Permission.id == permission_id))
    return result.rowcount > 0


def as_dict(row: models.Permission) -> dict:
    return {"id": row.id, "user": row.user_name,
            "domain": row.user_domain or None, "role": row.role,
            "cluster": row.cluster}
