"""How placement fails: what it raises, and database errors as callers
see them."""

import contextlib
from collections.abc import Iterator

from sqlalchemy import exc as sa_exc

from scheduler import claims
from scheduler import exception
from scheduler.db import api as db_api


class LockHoldTimeout(exception.NoValidHost):
    """A scheduling pass held the cluster lock past ``[scheduler]
    lock_hold_timeout``; it stopped, released its claims and the lock.

    A NoValidHost, so that it reaches RPC callers as the "could not
    place" answer they already handle, with its own message.
    """


@contextlib.contextmanager
def database_errors(operation: str) -> Iterator[None]:
    """SQLAlchemy errors raised inside become ``claims.DatabaseError``
    saying whether trying again later may help."""
    try:
        yield
    except sa_exc.SQLAlchemyError as e:
        hint = ("the database is unreachable, try again later"
                if db_api.is_retriable(e) else "the request was rolled "
                "back")
        raise claims.DatabaseError(
            f"{operation} failed on a database error ({hint}): "
            f"{db_api.one_line(e)}") from e
