"""Named locks held in the database, shared by every process using it.

PostgreSQL advisory locks, MariaDB/MySQL ``GET_LOCK`` and, for SQLite, a
lock file next to the database file. Used to serialise ``db sync`` runs
and (``[scheduler] cluster_lock``) scheduling within one cluster.
"""

import contextlib
import errno
import fcntl
import hashlib
import os
import time
from collections.abc import Iterator

import sqlalchemy as sa
import tenacity
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from scheduler import exception

_SQLITE_POLL_INTERVAL = 0.05


class LockTimeout(exception.SchedulerError):
    """The lock stayed held by someone else for longer than allowed."""

    def __init__(self, name: str, timeout: float):
        self.name = name
        super().__init__(f"lock {name!r} still held by another process "
                         f"after {timeout:g} s")


def _advisory_key(name: str) -> int:
    """A stable signed 64-bit key for ``pg_advisory_lock``."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@contextlib.contextmanager
def database_lock(engine: Engine, name: str,
                  timeout: float) -> Iterator[None]:
    """Hold lock ``name`` across all processes sharing the database.

    Waits up to ``timeout`` seconds, then raises LockTimeout. The lock is
    bound to a connection of its own, so work done under it may use other
    connections and commit freely.
    """
    backend = engine.dialect.name
    if backend == "sqlite":
        with _sqlite_file_lock(engine, name, timeout):
            yield
        return
    with engine.connect() as connection:
        if backend == "postgresql":
            key = {"key": _advisory_key(name)}
            # SET LOCAL ends with this transaction; the session-level
            # advisory lock outlives it.
            connection.execute(sa.text(
                f"SET LOCAL lock_timeout = '{int(timeout * 1000)}ms'"))
            try:
                connection.execute(sa.text("SELECT pg_advisory_lock(:key)"),
                                   key)
            except sa_exc.OperationalError as e:
                if getattr(e.orig, "sqlstate", None) == "55P03":
                    raise LockTimeout(name, timeout) from e
                raise
            release, params = sa.text("SELECT pg_advisory_unlock(:key)"), key
        else:
            params = {"name": name[:64]}
            got = connection.execute(
                sa.text("SELECT GET_LOCK(:name, :timeout)"),
                {**params, "timeout": timeout}).scalar()
            if got != 1:
                raise LockTimeout(name, timeout)
            release = sa.text("SELECT RELEASE_LOCK(:name)")
        connection.commit()
        try:
            yield
        finally:
            # The pool keeps the session open, so the lock must be given
            # back explicitly; if the session died, the lock died with it.
            with contextlib.suppress(sa_exc.DBAPIError):
                connection.execute(release, params)
                connection.commit()


def _held_elsewhere(error: BaseException) -> bool:
    """True when flock(LOCK_NB) failed because another holds the lock."""
    return isinstance(error, OSError) and error.errno in (errno.EAGAIN,
                                                          errno.EACCES)


def _same_file(path: str, lock_file) -> bool:
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(lock_file.fileno())
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _flock(lock_file, name: str, deadline: float, timeout: float) -> None:
    try:
        # Polled: flock() has no timeout of its own.
        tenacity.Retrying(
            retry=tenacity.retry_if_exception(_held_elsewhere),
            stop=lambda state: time.monotonic() >= deadline,
            wait=tenacity.wait_fixed(_SQLITE_POLL_INTERVAL),
        )(fcntl.flock, lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except tenacity.RetryError:
        raise LockTimeout(name, timeout) from None


@contextlib.contextmanager
def _sqlite_file_lock(engine: Engine, name: str,
                      timeout: float) -> Iterator[None]:
    database = engine.url.database
    if not database or database == ":memory:":
        yield  # a private in-memory database has no other process
        return
    safe_name = hashlib.blake2b(name.encode(), digest_size=8).hexdigest()
    path = f"{os.path.abspath(database)}.{safe_name}.lock"
    deadline = time.monotonic() + timeout
    while True:
        with open(path, "a+") as lock_file:
            _flock(lock_file, name, deadline, timeout)
            # The holder removes the file at release, so that none is
            # left beside the database: one locked after that is no
            # longer the lock (a holder of the new file would not see
            # ours). Open the path again.
            if not _same_file(path, lock_file):
                continue
            try:
                yield
            finally:
                # Removed while still held: a waiter on this file then
                # opens a new one.
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            return
