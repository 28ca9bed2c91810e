"""Fixtures shared by the functional tests.

Functional tests run against real database servers and start the real
console scripts as subprocesses, so that what they check is what an operator
gets: config files parsed by oslo.config, exit codes, stderr.

Databases:

* ``db_url`` is parametrised over ``sqlite``, ``postgresql`` and ``mysql``
  (MariaDB); ``sqlite_url``, ``postgresql_url`` and ``mysql_url`` give one
  backend only. Each yields the URL of a fresh, empty database that is
  dropped after the test. Narrow ``db_url`` to some backends with
  ``@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)``.
  ``db_url`` cases carry a marker per backend (``-m "not mysql"``).
* The servers default to PostgreSQL and MariaDB on 127.0.0.1; point the
  tests elsewhere with ``SCHEDULER_TEST_PG_URL`` / ``SCHEDULER_TEST_MYSQL_URL``
  (an administrative URL allowed to create and drop databases).
* A server that cannot be reached skips its tests, except in CI
  (``CI=true``) where a silently skipped backend would hide regressions,
  so the tests fail instead.

Processes (``processes``): ``write_config`` writes an oslo.config file,
``run_console_script`` runs a console script to completion,
``start_console_script`` starts a long-running one and stops it after the
test. The broker (``rpc_harness``): ``broker_url``, ``service_config``;
there too the scheduler-manage tests' ``fleet``.
The example plugin package (``plugin_packages``): ``plugin_env``.
"""

import contextlib
import dataclasses
import os
import uuid
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from oslo_config import cfg
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from scheduler import conf as scheduler_conf
from scheduler.db import api as db_api
from scheduler.db import schema
from tests.functional import private_servers
from tests.functional.plugin_packages import plugin_env  # noqa: F401
from tests.functional.processes import console_script  # noqa: F401
from tests.functional.processes import run_console_script  # noqa: F401
from tests.functional.processes import start_console_script  # noqa: F401
from tests.functional.processes import write_config  # noqa: F401
from tests.functional.rpc_harness import broker_url  # noqa: F401
from tests.functional.rpc_harness import fleet  # noqa: F401
from tests.functional.rpc_harness import service_config  # noqa: F401

BACKENDS = ("sqlite", "postgresql", "mysql")

# Connecting to an absent server should cost seconds, not the driver default.
_ADMIN_CONNECT_TIMEOUT = 5
_SCRIPT_TIMEOUT = 60


@dataclasses.dataclass(frozen=True)
class _Server:
    backend: str
    title: str
    env_var: str
    default_admin_url: str
    create_sql: str
    drop_sql: str


_POSTGRESQL = _Server(
    backend="postgresql",
    title="PostgreSQL",
    env_var="SCHEDULER_TEST_PG_URL",
    default_admin_url="postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
    create_sql="CREATE DATABASE {name}",
    # FORCE ends sessions still connected (a crashed subprocess, an engine a
    # test forgot to dispose), which would otherwise make the drop fail.
    drop_sql="DROP DATABASE IF EXISTS {name} WITH (FORCE)",
)
_MYSQL = _Server(
    backend="mysql",
    title="MariaDB/MySQL",
    env_var="SCHEDULER_TEST_MYSQL_URL",
    default_admin_url="mysql+pymysql://root@127.0.0.1:3306/",
    # The server default may still be latin1 or 3-byte utf8.
    create_sql="CREATE DATABASE {name} CHARACTER SET utf8mb4",
    drop_sql="DROP DATABASE IF EXISTS {name}",
)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_configure(config: pytest.Config) -> None:
    for backend in BACKENDS:
        config.addinivalue_line(
            "markers", f"{backend}: the test runs on the {backend} backend")


def _admin_engine(server: _Server) -> Iterator[Engine]:
    url = os.environ.get(server.env_var) or server.default_admin_url
    engine = sa.create_engine(
        url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool,
        connect_args={"connect_timeout": _ADMIN_CONNECT_TIMEOUT})
    try:
        with engine.connect():
            pass
    except sa_exc.DBAPIError as e:
        error = " ".join(str(e.orig or e).split())
    else:
        error = None
    # Outside the except block: the driver's traceback would only bury the
    # message.
    if error is not None:
        engine.dispose()
        message = (f"{server.title} server at "
                   f"{engine.url.render_as_string(hide_password=True)} is "
                   f"unreachable ({error}); start it or set "
                   f"{server.env_var} to an admin URL of another server")
        if in_ci():
            pytest.fail(f"CI=true: {message}", pytrace=False)
        pytest.skip(message)
    yield engine
    engine.dispose()


# Session-scoped so that an unreachable server is probed once: pytest caches
# the skip (or failure) and raises it again for every later test.
@pytest.fixture(scope="session")
def postgresql_admin_engine() -> Iterator[Engine]:
    """AUTOCOMMIT engine on the PostgreSQL server's maintenance database."""
    yield from _admin_engine(_POSTGRESQL)


@pytest.fixture(scope="session")
def mysql_admin_engine() -> Iterator[Engine]:
    """AUTOCOMMIT engine on the MariaDB/MySQL server, no default database."""
    yield from _admin_engine(_MYSQL)


def _kill_mysql_sessions(connection: sa.Connection, name: str) -> None:
    # MariaDB has no DROP ... FORCE; an idle session holding a metadata
    # lock on a table would make the drop wait for lock_wait_timeout.
    ids = connection.execute(sa.text(
        "SELECT id FROM information_schema.processlist "
        "WHERE db = :name AND id <> CONNECTION_ID()"), {"name": name}).all()
    for (session_id,) in ids:
        # The session may have ended by itself in the meantime.
        with contextlib.suppress(sa_exc.DBAPIError):
            connection.execute(sa.text(f"KILL {int(session_id)}"))


def _fresh_database(server: _Server, admin: Engine) -> Iterator[str]:
    name = f"msched_{uuid.uuid4().hex}"
    with admin.connect() as connection:
        connection.execute(sa.text(server.create_sql.format(name=name)))
    try:
        yield admin.url.set(database=name).render_as_string(
            hide_password=False)
    finally:
        # Pooled connections of the code under test keep sessions open on
        # the database; close them before dropping it.
        db_api.dispose_engines()
        with admin.connect() as connection:
            if server.backend == "mysql":
                _kill_mysql_sessions(connection, name)
            connection.execute(sa.text(server.drop_sql.format(name=name)))


@pytest.fixture
def postgresql_url(postgresql_admin_engine: Engine) -> Iterator[str]:
    """URL of a new, empty PostgreSQL database, dropped after the test."""
    yield from _fresh_database(_POSTGRESQL, postgresql_admin_engine)


@pytest.fixture
def mysql_url(mysql_admin_engine: Engine) -> Iterator[str]:
    """URL of a new, empty MariaDB/MySQL database, dropped after the test."""
    yield from _fresh_database(_MYSQL, mysql_admin_engine)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    """URL of a new SQLite file in the test's tmp_path."""
    yield f"sqlite:///{tmp_path / 'scheduler.sqlite'}"
    db_api.dispose_engines()


@pytest.fixture(params=[pytest.param(backend, marks=getattr(pytest.mark,
                                                            backend))
                        for backend in BACKENDS])
def db_url(request: pytest.FixtureRequest) -> str:
    """URL of a fresh, empty database on each backend in turn."""
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture
def balancing_conf() -> Iterator[Callable[[str], cfg.ConfigOpts]]:
    """A function giving a private scheduler ConfigOpts on a database URL,
    its schema created, with allocation ratio 1.0 for vCPUs (the
    balancer scenarios count busy vCPUs one for one)."""
    def make(url: str) -> cfg.ConfigOpts:
        conf = cfg.ConfigOpts()
        scheduler_conf.register_opts(conf)
        conf([], default_config_files=[], default_config_dirs=[])
        conf.set_override("connection", url, group="database")
        conf.set_override("cpu_allocation_ratio", 1.0,
                          group="filter_scheduler")
        schema.db_sync(db_api.get_engine(conf))
        return conf

    yield make
    db_api.dispose_engines()


# Private servers: fault tests stop and restart these, never the machine's.


@pytest.fixture
def private_rabbitmq() -> Iterator[private_servers.PrivateRabbitMQ]:
    """A RabbitMQ node of the test's own (``.url``, ``.stop_app()``,
    ``.start_app()``), stopped and removed after the test."""
    server = private_servers.PrivateRabbitMQ()
    try:
        yield server.start()
    finally:
        server.close()


@pytest.fixture
def private_postgresql() -> Iterator[private_servers.PrivatePostgreSQL]:
    """A PostgreSQL cluster of the test's own (``.url`` of its
    ``postgres`` database, ``.stop()``, ``.start()``), removed after the
    test."""
    server = private_servers.PrivatePostgreSQL()
    try:
        yield server.start()
    finally:
        server.close()


@pytest.fixture
def private_mariadb() -> Iterator[private_servers.PrivateMariaDB]:
    """A MariaDB server of the test's own (``.url`` without a database,
    ``.stop()``, ``.start()``), removed after the test."""
    server = private_servers.PrivateMariaDB()
    try:
        yield server.start()
    finally:
        server.close()


