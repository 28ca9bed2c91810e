"""The db layer in-process, on SQLite files."""

import contextlib
import importlib.util
import sqlite3

import pytest
import sqlalchemy as sa
from oslo_config import cfg
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url

from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import schema


@pytest.fixture
def db_conf(tmp_path) -> cfg.ConfigOpts:
    """A private ConfigOpts naming an SQLite file that does not exist yet."""
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf([], project="scheduler")
    conf.set_override("connection", f"sqlite:///{tmp_path}/unit.sqlite",
                      group="database")
    yield conf
    db_api.dispose_engines()


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def test_sync_from_empty_reaches_head(db_conf):
    engine = db_api.get_engine(db_conf)
    assert schema.db_version(engine) is None

    schema.db_sync(engine)

    assert schema.db_version(engine) == schema.head_version()
    assert _tables(engine) == {"alembic_version",
                               *models.Base.metadata.tables}


def test_second_sync_is_a_noop(db_conf):
    engine = db_api.get_engine(db_conf)
    schema.db_sync(engine)
    with engine.begin() as connection:
        connection.execute(sa.insert(models.ComputeNode).values(
            uuid="3f0f3c4e-0000-4000-8000-000000000001", host="node-1",
            hypervisor_hostname="node-1"))
    before = {table: [(c["name"], c["nullable"])
                      for c in sa.inspect(engine).get_columns(table)]
              for table in _tables(engine)}

    schema.db_sync(engine)

    after = {table: [(c["name"], c["nullable"])
                     for c in sa.inspect(engine).get_columns(table)]
             for table in _tables(engine)}
    assert after == before
    assert schema.db_version(engine) == schema.head_version()
    with engine.connect() as connection:
        # A re-run migration would have recreated the table, empty.
        assert connection.scalar(sa.select(sa.func.count()).select_from(
            models.ComputeNode)) == 1


def test_unknown_dialect_is_a_config_error():
    with pytest.raises(exception.ConfigError) as raised:
        db_api.validate_connection_url("notadb://x")
    message = str(raised.value)
    assert "[database] connection" in message
    assert "notadb://x" in message


def test_a_driver_that_is_not_installed_is_a_config_error():
    # Issue 30's trial: compute-monitor crashed with ModuleNotFoundError.
    missing = next(name for name in ("psycopg2", "pg8000")
                   if importlib.util.find_spec(name) is None)
    url = f"postgresql+{missing}://scheduler:secret@db/scheduler"
    with pytest.raises(exception.ConfigError) as raised:
        db_api.validate_connection_url(url)
    message = str(raised.value)
    assert "for [database] connection" in message
    assert "secret" not in message
    assert f"the {missing} driver is not installed" in message


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///relative.sqlite",
                                 "postgresql+psycopg://u@h/db",
                                 "mysql+pymysql://u@h/db"])
def test_installed_drivers_are_valid(url):
    db_api.validate_connection_url(url)


def test_operational_error_is_retriable():
    error = sa_exc.OperationalError("SELECT 1", {},
                                    Exception("server closed the connection"))
    assert db_api.is_retriable(error)


def test_integrity_error_is_not_retriable():
    error = sa_exc.IntegrityError("INSERT ...", {},
                                  Exception("UNIQUE constraint failed"))
    assert not db_api.is_retriable(error)


def _synchronous(engine: sa.Engine) -> int:
    with engine.connect() as connection:
        return connection.exec_driver_sql("PRAGMA synchronous").scalar()


def test_sqlite_commits_wait_for_the_disk_by_default(db_conf):
    assert _synchronous(db_api.get_engine(db_conf)) == 2  # FULL


def test_sqlite_synchronous_false_turns_the_wait_off(db_conf):
    db_conf.set_override("sqlite_synchronous", False, group="database")
    engine = db_api.get_engine(db_conf)
    assert _synchronous(engine) == 0  # OFF
    with engine.connect() as connection:
        assert connection.exec_driver_sql(
            "PRAGMA journal_mode").scalar() == "wal"


def test_sqlite_callers_share_one_engine_without_pre_ping(db_conf):
    engine = db_api.get_engine(db_conf)
    assert db_api.get_engine(db_conf, pre_ping=False) is engine
    assert engine.pool._pre_ping is False
    # The connection used last first: its page cache is the warm one.
    with engine.connect() as first, engine.connect() as second:
        first_dbapi = first.connection.dbapi_connection
        second_dbapi = second.connection.dbapi_connection
    with engine.connect() as again:
        assert again.connection.dbapi_connection is first_dbapi
    assert first_dbapi is not second_dbapi


def test_sqlite_callers_never_wait_for_a_pooled_connection(db_conf):
    # More than a default pool's 15 held at once (a request's session
    # and the refresh it runs, in every API thread): none waits.
    engine = db_api.get_engine(db_conf)
    with contextlib.ExitStack() as held:
        connections = [held.enter_context(engine.connect())
                       for _ in range(20)]
        assert len({id(c.connection.dbapi_connection)
                    for c in connections}) == 20


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_an_in_memory_sqlite_database_still_gets_an_engine(db_conf, url):
    db_conf.set_override("connection", url, group="database")
    engine = db_api.get_engine(db_conf)
    assert db_api.get_engine(db_conf, pre_ping=False) is engine
    with engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT 1").scalar() == 1


def test_server_databases_keep_a_pre_pinging_engine(db_conf):
    # Creating an engine connects nowhere.
    db_conf.set_override(
        "connection", "postgresql+psycopg://nobody@127.0.0.1:1/none",
        group="database")
    pinging = db_api.get_engine(db_conf)
    request_path = db_api.get_engine(db_conf, pre_ping=False)
    assert pinging is not request_path
    assert pinging.pool._pre_ping is True
    assert request_path.pool._pre_ping is False


def test_head_revision_constant_is_alembics_head():
    # schema_problem() trusts it to skip alembic when the schema is current.
    assert schema.head_version() == schema.HEAD_REVISION


def test_schema_problem_reads_the_stored_revision(db_conf):
    engine = db_api.get_engine(db_conf)
    schema.db_sync(engine, "0001")
    problem = schema.schema_problem(db_conf, "this agent")
    assert problem.endswith(
        f"at revision 0001, this agent needs {schema.HEAD_REVISION}: run "
        "'scheduler-manage db sync'")
    schema.db_sync(engine)
    assert schema.schema_problem(db_conf, "this agent") is None
    with engine.begin() as connection:
        connection.execute(sa.text(
            "UPDATE alembic_version SET version_num = 'ffff'"))
    assert "migrated by a newer version" in schema.schema_problem(
        db_conf, "this agent")


def test_a_failed_migration_is_a_migration_error(db_conf):
    engine = db_api.get_engine(db_conf)
    schema.db_sync(engine)
    with engine.begin() as connection:
        connection.execute(sa.text(
            "UPDATE alembic_version SET version_num = 'ffff'"))
    with pytest.raises(schema.MigrationError, match="ffff"):
        schema.db_sync(engine)


class _LockedAtFirst:
    """A DBAPI connection whose first ``fails`` statements fail as SQLite
    fails a lock it does not wait for."""

    def __init__(self, fails: int, message: str = "database is locked"):
        self.fails, self.message, self.statements = fails, message, []

    def cursor(self):
        return self

    def execute(self, statement):
        if self.fails:
            self.fails -= 1
            raise sqlite3.OperationalError(self.message)
        self.statements.append(statement)
        return self

    def fetchone(self):
        return ("delete",)

    def close(self):
        pass


def test_sqlite_settings_are_tried_again_while_the_file_is_locked():
    connection = _LockedAtFirst(fails=3)
    db_api.set_sqlite_pragmas(connection, "FULL")
    assert connection.statements == [
        "PRAGMA journal_mode", "PRAGMA journal_mode=WAL",
        "PRAGMA foreign_keys=ON", "PRAGMA synchronous=FULL"]


def test_sqlite_settings_give_up_after_their_patience():
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        db_api.set_sqlite_pragmas(_LockedAtFirst(fails=10**6), "FULL",
                                  patience=0.2)


def test_sqlite_settings_do_not_retry_other_errors():
    connection = _LockedAtFirst(fails=1, message="disk I/O error")
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        db_api.set_sqlite_pragmas(connection, "FULL")
    assert connection.statements == []


def test_a_file_in_wal_already_is_not_switched_again(db_conf):
    engine = db_api.get_engine(db_conf)
    with engine.connect() as connection:
        connection.exec_driver_sql("SELECT 1")
    raw = sqlite3.connect(make_url(
        db_conf.database.connection).database)
    statements: list[str] = []
    raw.set_trace_callback(statements.append)
    db_api.set_sqlite_pragmas(raw, "OFF")
    raw.close()
    assert "PRAGMA journal_mode=WAL" not in statements
    assert statements[0] == "PRAGMA journal_mode"
