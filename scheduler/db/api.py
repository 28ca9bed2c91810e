"""Database engines and sessions, shared by the scheduler and the agent."""

import os
import sqlite3
import threading
import time

import sqlalchemy as sa
from oslo_config import cfg
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine
from sqlalchemy.engine import make_url

from scheduler import exception

_engines: dict[tuple[str, bool, bool], Engine] = {}
_engines_lock = threading.Lock()

# Errors after which the same statement may succeed once the database is
# reachable again: lost connections, refused connections, lock timeouts.
RETRIABLE_ERRORS = (sa_exc.OperationalError, sa_exc.InterfaceError,
                    sa_exc.TimeoutError)


def validate_connection_url(url: str) -> None:
    """Raise ConfigError unless ``url`` names a database we can drive.

    Checks the form and that the dialect and driver import, without
    connecting, so a typo stops start-up but a database that is down does
    not.
    """
    try:
        parsed = make_url(url)
        dialect = parsed.get_dialect()
    except (sa_exc.ArgumentError, sa_exc.NoSuchModuleError, ValueError) as e:
        raise exception.ConfigError(
            "database", "connection", safe_url(url),
            "expected a SQLAlchemy URL such as sqlite:///path, "
            "postgresql+psycopg://user@host/db or "
            f"mysql+pymysql://user@host/db ({e})") from e
    try:
        # The dialect loads without its driver; connecting would then fail
        # with ModuleNotFoundError's traceback.
        dialect.import_dbapi()
    except ImportError as e:
        raise exception.ConfigError(
            "database", "connection", safe_url(url),
            f"the {parsed.get_driver_name()} driver is not installed "
            f"({e}); installed with this project: postgresql+psycopg, "
            "mysql+pymysql, sqlite") from e


def set_sqlite_pragmas(dbapi_connection: sqlite3.Connection,
                       synchronous: str, patience: float = 30.0) -> None:
    """A new SQLite connection's settings: WAL, foreign keys, and how
    commits wait for the disk (``synchronous``: FULL or OFF).

    Some of the locks a connection takes while it first opens a WAL file
    fail at once with "database is locked" instead of waiting out the
    busy timeout (several processes starting together: a service's
    workers); the settings are tried again for ``patience`` seconds.
    """
    deadline = time.monotonic() + patience
    while True:
        cursor = dbapi_connection.cursor()
        try:
            # WAL lets the agents write while schedulers read the file.
            # It is kept in the file: set only when it is not WAL yet,
            # since changing it takes an exclusive lock.
            mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
            if mode != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            # FULL is SQLite's default; named so that OFF reads as the
            # exception it is.
            cursor.execute(f"PRAGMA synchronous={synchronous}")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
        finally:
            cursor.close()
        time.sleep(0.05)


def _new_engine(url: str, connect_timeout: int, pre_ping: bool,
                sqlite_synchronous: bool = True) -> Engine:
    parsed = make_url(url)
    kwargs: dict = {"pool_pre_ping": pre_ping, "future": True}
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(parsed.database)),
                        exist_ok=True)
        kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
        if issubclass(parsed.get_dialect().get_pool_class(parsed),
                      sa.pool.QueuePool):  # a file (memory: one per thread)
            # Every caller shares this pool (get_engine()), and some hold
            # a connection while taking another (an API request's
            # session, then the host cache's refresh): none waits for a
            # slot, a connection to a file being a file handle. SQLite's
            # page cache lives in each connection and is emptied when
            # another one commits: the one used last is handed out first.
            kwargs["max_overflow"] = -1
            kwargs["pool_use_lifo"] = True
    elif backend == "postgresql":
        kwargs["connect_args"] = {"connect_timeout": connect_timeout}
        if not pre_ping:
            # The request path's engine (see get_engine()).
            kwargs["isolation_level"] = "AUTOCOMMIT"
    elif backend in ("mysql", "mariadb"):
        kwargs["connect_args"] = {"connect_timeout": connect_timeout}
        kwargs["pool_recycle"] = 3600
        # The tables are utf8mb4 (migration 0003); a connection in another
        # character set (MySQLdb's default is latin1) would mangle or
        # refuse text outside it.
        if "charset" not in parsed.query:
            parsed = parsed.update_query_dict({"charset": "utf8mb4"})
    engine = sa.create_engine(parsed, **kwargs)
    if backend == "sqlite":
        synchronous = "FULL" if sqlite_synchronous else "OFF"

        def on_connect(dbapi_connection, _record) -> None:
            set_sqlite_pragmas(dbapi_connection, synchronous)

        sa.event.listen(engine, "connect", on_connect)
    return engine


def get_engine(conf: cfg.ConfigOpts, pre_ping: bool = True) -> Engine:
    """The process-wide engine for ``[database] connection``.

    ``pre_ping`` tests each connection taken from the pool with a round
    trip first, so that a connection the database dropped is replaced
    instead of failing the caller's statement. Callers that retry a
    statement failing on a disconnect themselves (the request path: the
    host cache's refresh, claims) pass False and get an engine of their
    own without that round trip. On PostgreSQL its connections are in
    autocommit: the refresh's reads and the one-statement claim need no
    transaction (psycopg would send a BEGIN before them, the pool a
    ROLLBACK after), and switching a pooled connection to autocommit and
    back per request costs more than the statement; a transaction is
    asked for by isolation level (``claim_sql.write_transaction``).
    So on that engine ``engine.begin()`` is no transaction on
    PostgreSQL: every write of more than one statement goes through
    ``write_transaction``. On SQLite every caller shares one engine
    without pre-ping.
    """
    url = conf.database.connection
    synchronous = conf.database.sqlite_synchronous
    key = (url, pre_ping, synchronous)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            validate_connection_url(url)
            if make_url(url).get_backend_name() == "sqlite":
                # A file never drops a connection: nothing to ping, and
                # one pool for every caller, so that a process writing and
                # reading on one thread (the simulator, a command) keeps
                # one connection, and its page cache.
                pre_ping = False
                engine = _engines.get((url, pre_ping, synchronous))
            if engine is None:
                engine = _new_engine(url, conf.database.connect_timeout,
                                     pre_ping, synchronous)
            _engines[key] = _engines[(url, pre_ping, synchronous)] = engine
        return engine


def dispose_engines() -> None:
    """Close every pooled connection (tests, forked workers)."""
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


def safe_url(url: str) -> str:
    """The URL with its password hidden, for logs and error messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (sa_exc.ArgumentError, ValueError):
        return "<malformed URL>"


def one_line(error: BaseException) -> str:
    """The driver's message of ``error`` on one line (psycopg adds hint
    lines), for log lines and stderr."""
    orig = getattr(error, "orig", None) or error
    return " ".join(line.strip() for line in str(orig).splitlines()
                    if line.strip())


def is_retriable(error: BaseException) -> bool:
    """True for errors that mean "database unreachable", not "bad data"."""
    if isinstance(error, RETRIABLE_ERRORS):
        return True
    return (isinstance(error, sa_exc.DBAPIError)
            and error.connection_invalidated)
