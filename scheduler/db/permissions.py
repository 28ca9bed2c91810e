"""Permissions: a user's role on one cluster or on all (``*``), shared
by the REST API and ``scheduler-manage permission``."""

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from scheduler.db import models

ROLES = ("admin", "cluster_admin", "reader")
ALL_CLUSTERS = "*"


class InvalidPermission(ValueError):
    """A permission that cannot be granted, with why (names the field)."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


def check(user: object, role: object, cluster: object) -> None:
    if not isinstance(user, str) or not user.strip() or len(user) > 255:
        raise InvalidPermission("user", "expected a non-empty string of at "
                               "most 255 characters")
    if role not in ROLES:
        raise InvalidPermission("role", f"expected one of {', '.join(ROLES)}")
    if not isinstance(cluster, str) or not cluster.strip() or len(
            cluster) > 255:
        raise InvalidPermission("cluster", "expected a cluster name or *")
    if role == "admin" and cluster != ALL_CLUSTERS:
        raise InvalidPermission("cluster", "admin is system-wide: expected *")


def of_user(session: Session, user: str) -> Sequence[models.Permission]:
    return session.scalars(sa.select(models.Permission).where(
        models.Permission.user_name == user)).all()


def list_all(session: Session) -> Sequence[models.Permission]:
    return session.scalars(sa.select(models.Permission).order_by(
        models.Permission.user_name, models.Permission.role,
        models.Permission.cluster)).all()


def add(session: Session, user: str, role: str,
        cluster: str = ALL_CLUSTERS) -> models.Permission:
    """Grant; raises InvalidPermission for bad values and LookupError with
    the existing id for a duplicate."""
    check(user, role, cluster)
    existing = session.scalars(sa.select(models.Permission).where(
        models.Permission.user_name == user,
        models.Permission.role == role,
        models.Permission.cluster == cluster)).first()
    if existing is not None:
        raise LookupError(existing.id)
    row = models.Permission(id=str(uuid.uuid4()), user_name=user, role=role,
                            cluster=cluster, created_at=models.utcnow())
    session.add(row)
    session.flush()
    return row


def remove(session: Session, permission_id: str) -> bool:
    result = session.execute(sa.delete(models.Permission).where(
        models.Permission.id == permission_id))
    return result.rowcount > 0


def as_dict(row: models.Permission) -> dict:
    return {"id": row.id, "user": row.user_name, "role": row.role,
            "cluster": row.cluster}
