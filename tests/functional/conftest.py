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

Processes: ``write_config`` writes an oslo.config file, ``run_console_script``
runs a console script to completion, ``start_console_script`` starts a
long-running one and stops it after the test.
"""

import contextlib
import dataclasses
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
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


def _format_value(value: object) -> str:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (list, tuple)):
        text = ",".join(str(item) for item in value)
    else:
        text = str(value)
    if "\n" in text:
        raise ValueError(f"config values must be one line: {text!r}")
    # oslo.config substitutes $name; a literal dollar (say in a password)
    # must be doubled.
    return text.replace("$", "$$")


ConfigWriter = Callable[..., Path]


@pytest.fixture
def write_config(tmp_path: Path) -> ConfigWriter:
    """A function writing an oslo.config file and returning its path.

    ``write_config({"database": {"connection": url}}, name="x.conf")``.
    Values may be str, int, float, bool or lists (written comma-separated).
    Unless the sections set it, ``[DEFAULT] state_path`` points into
    tmp_path, so that the started programs never write into the home
    directory of whoever runs the tests.
    """
    def write(sections: Mapping[str, Mapping[str, object]],
              name: str = "scheduler.conf") -> Path:
        sections = {section: dict(options)
                    for section, options in sections.items()}
        sections.setdefault("DEFAULT", {}).setdefault(
            "state_path", tmp_path / "state")
        lines = []
        for section, options in sections.items():
            lines.append(f"[{section}]")
            lines.extend(f"{key} = {_format_value(value)}"
                         for key, value in options.items())
            lines.append("")
        path = tmp_path / name
        path.write_text("\n".join(lines))
        return path

    return write


def console_script(name: str) -> str:
    """Path of an installed console script of this venv.

    Entry points cannot be run with ``python -m``; the script pip wrote next
    to the interpreter is what operators run.
    """
    path = os.path.join(os.path.dirname(sys.executable), name)
    if not os.access(path, os.X_OK):
        pytest.fail(f"console script {path} not found; install the project "
                    "(pip install -e .) into the venv running pytest",
                    pytrace=False)
    return path


def _command(name: str, args: tuple[str, ...],
             config_file: str | os.PathLike | None) -> list[str]:
    command = [console_script(name)]
    if config_file is not None:
        command += ["--config-file", os.fspath(config_file)]
    return command + list(args)


def _environment(env: Mapping[str, str] | None) -> dict[str, str]:
    environment = dict(os.environ)
    # Output of a process killed at the end of a test must not be lost in
    # its buffers.
    environment["PYTHONUNBUFFERED"] = "1"
    environment.update(env or {})
    return environment


ScriptRunner = Callable[..., subprocess.CompletedProcess]


@pytest.fixture
def run_console_script() -> ScriptRunner:
    """A function running a console script to completion.

    ``run_console_script("scheduler-manage", "db", "sync",
    config_file=path, timeout=60, env={...})`` returns the CompletedProcess
    with text stdout and stderr; it does not check the exit status. A run
    past its timeout is killed and fails the test with its output so far.
    """
    def run(name: str, *args: str,
            config_file: str | os.PathLike | None = None,
            timeout: float = _SCRIPT_TIMEOUT,
            env: Mapping[str, str] | None = None,
            ) -> subprocess.CompletedProcess:
        command = _command(name, args, config_file)
        try:
            return subprocess.run(command, capture_output=True, text=True,
                                  timeout=timeout, env=_environment(env),
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"{' '.join(command)} did not finish in {timeout}s;"
                        f"\nstdout:\n{_text(e.stdout)}"
                        f"\nstderr:\n{_text(e.stderr)}", pytrace=False)

    return run


def _text(output: bytes | str | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


@dataclasses.dataclass
class ScriptProcess:
    """A started console script whose output goes to files.

    Files rather than pipes: a long-running service that logs more than a
    pipe buffer holds would block while the test is not reading.
    """

    command: list[str]
    popen: subprocess.Popen
    stdout_path: Path
    stderr_path: Path

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait(self, timeout: float = _SCRIPT_TIMEOUT
             ) -> subprocess.CompletedProcess:
        """Wait for exit; fails the test (after a kill) on timeout."""
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"{' '.join(self.command)} did not exit in "
                        f"{timeout}s;\nstdout:\n{self.stdout}"
                        f"\nstderr:\n{self.stderr}", pytrace=False)
        return subprocess.CompletedProcess(self.command,
                                           self.popen.returncode,
                                           self.stdout, self.stderr)

    def stop(self, timeout: float = 10) -> int:
        """SIGTERM, then SIGKILL after ``timeout``; returns the status."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return self.popen.returncode


ScriptStarter = Callable[..., ScriptProcess]


@pytest.fixture
def start_console_script(tmp_path: Path) -> Iterator[ScriptStarter]:
    """A function starting a console script in the background.

    Same arguments as ``run_console_script`` minus ``timeout``; returns a
    ScriptProcess. Processes still running after the test are stopped.
    """
    started: list[ScriptProcess] = []

    def start(name: str, *args: str,
              config_file: str | os.PathLike | None = None,
              env: Mapping[str, str] | None = None) -> ScriptProcess:
        command = _command(name, args, config_file)
        stem = tmp_path / f"{name}-{len(started)}"
        stdout_path = stem.with_suffix(".stdout")
        stderr_path = stem.with_suffix(".stderr")
        with open(stdout_path, "wb") as stdout, \
                open(stderr_path, "wb") as stderr:
            popen = subprocess.Popen(command, stdout=stdout, stderr=stderr,
                                     stdin=subprocess.DEVNULL,
                                     env=_environment(env))
        process = ScriptProcess(command, popen, stdout_path, stderr_path)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


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
