"""``scheduler-manage db`` run as operators run it, on every backend."""

import datetime
import subprocess
import uuid
from collections.abc import Callable

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.orm import Session

from scheduler.db import models
from scheduler.db import schema

MANAGE = "scheduler-manage"

# The callables the conftest fixtures return.
ConfigWriter = Callable[..., object]
ScriptRunner = Callable[..., subprocess.CompletedProcess]
ScriptStarter = Callable[..., object]


@pytest.fixture
def manage(run_console_script: ScriptRunner, write_config: ConfigWriter,
           db_url: str):
    """Runs ``scheduler-manage`` with a config file naming ``db_url``."""
    config = write_config({"database": {"connection": db_url}})

    def run(*args: str):
        return run_console_script(MANAGE, *args, config_file=config)

    return run


def _ok(result) -> str:
    """The last stdout line of a successful run.

    oslo.log writes to stdout unless told otherwise, so the command's own
    output is the last line, after alembic's log lines.
    """
    assert result.returncode == 0, (
        f"exit {result.returncode}\nstdout:\n{result.stdout}"
        f"\nstderr:\n{result.stderr}")
    lines = result.stdout.strip().splitlines()
    assert lines, f"no output; stderr:\n{result.stderr}"
    return lines[-1]


def _snapshot(url: str) -> dict:
    """Everything about the schema a second sync could have changed."""
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        schema = {}
        for table in sorted(inspector.get_table_names()):
            schema[table] = {
                "columns": [(c["name"], repr(c["type"]), c["nullable"])
                            for c in inspector.get_columns(table)],
                "pk": inspector.get_pk_constraint(table)[
                    "constrained_columns"],
                # SQLite reports unnamed constraints with name None.
                "indexes": sorted(((i["name"], tuple(i["column_names"]),
                                    bool(i["unique"]))
                                   for i in inspector.get_indexes(table)),
                                  key=repr),
                "unique": sorted(((u["name"], tuple(u["column_names"]))
                                  for u in inspector.get_unique_constraints(
                                      table)), key=repr),
                "fks": sorted(((tuple(f["constrained_columns"]),
                                f["referred_table"])
                               for f in inspector.get_foreign_keys(table)),
                              key=repr),
            }
        with engine.connect() as connection:
            if "alembic_version" in schema:
                schema["alembic_version"]["rows"] = connection.execute(
                    sa.text("SELECT version_num FROM alembic_version")).all()
        return schema
    finally:
        engine.dispose()


def _version(url: str) -> str | None:
    engine = sa.create_engine(url)
    try:
        return schema.db_version(engine)
    finally:
        engine.dispose()


def test_sync_from_empty_then_noop(manage, db_url: str):
    assert _ok(manage("db", "version")) == "None"
    # Reading the version must not create alembic's table.
    assert _snapshot(db_url) == {}

    _ok(manage("db", "sync"))
    head = schema.head_version()
    assert _ok(manage("db", "version")) == head
    before = _snapshot(db_url)
    assert set(before) == {"alembic_version",
                           *models.Base.metadata.tables}
    assert _schema_differences(db_url) == []

    assert _ok(manage("db", "sync")) == f"database schema at revision {head}"
    assert _version(db_url) == head
    assert _snapshot(db_url) == before




def _schema_differences(url: str) -> list:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection, opts={"compare_type": True,
                                  "compare_server_default": True})
            # No exclusions needed: on SQLite, PostgreSQL and MariaDB the
            # comparison comes out empty, types (DATETIME(6), MEDIUMTEXT)
            # included. alembic skips its own version table.
            return compare_metadata(context, models.Base.metadata)
    finally:
        engine.dispose()


@pytest.fixture
def synced_db_url(db_url: str) -> str:
    # In-process: each scheduler-manage run costs over a second of imports,
    # and test_sync_from_empty_then_noop already checks that the schema the
    # real command creates has no differences from the models.
    engine = sa.create_engine(db_url)
    try:
        schema.db_sync(engine)
    finally:
        engine.dispose()
    return db_url


def test_schema_matches_models(synced_db_url: str):
    engine = sa.create_engine(synced_db_url)
    try:
        inspector = sa.inspect(engine)
        for table in models.Base.metadata.sorted_tables:
            columns = {c["name"]: c for c in inspector.get_columns(
                table.name)}
            assert set(columns) == set(table.columns.keys()), table.name
            for column in table.columns:
                assert columns[column.name]["nullable"] == column.nullable, (
                    f"{table.name}.{column.name}")
    finally:
        engine.dispose()
    assert _schema_differences(synced_db_url) == []


def test_datetimes_keep_microseconds(synced_db_url: str):
    # Incremental cache refreshes compare updated_at at microsecond
    # precision; MariaDB's plain DATETIME would round to whole seconds.
    stamp = datetime.datetime(2026, 11, 21, 12, 34, 56, 789012)
    engine = sa.create_engine(synced_db_url)
    try:
        with Session(engine) as session:
            session.add(models.ComputeNode(
                uuid=str(uuid.uuid4()), host="node-1",
                hypervisor_hostname="node-1.example.org",
                created_at=stamp, updated_at=stamp,
                metrics_updated_at=stamp))
            session.commit()
        with Session(engine) as session:
            node = session.scalars(sa.select(models.ComputeNode)).one()
            assert (node.created_at, node.updated_at,
                    node.metrics_updated_at) == (stamp, stamp, stamp)
    finally:
        engine.dispose()


def _one_line_error(result) -> str:
    assert "Traceback" not in result.stdout + result.stderr, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr:\n{result.stderr}"
    assert lines[0].startswith(f"{MANAGE}: error: "), lines[0]
    return lines[0]


def test_bad_connection_url_is_a_config_error(run_console_script: ScriptRunner,
                                              write_config: ConfigWriter):
    config = write_config({"database": {"connection": "notadb://x"}})
    result = run_console_script(MANAGE, "db", "sync", config_file=config)
    assert result.returncode == 2, result
    line = _one_line_error(result)
    assert "[database] connection" in line
    assert "notadb://x" in line


def test_unreachable_database_is_one_line(run_console_script: ScriptRunner,
                                          write_config: ConfigWriter):
    # Nothing listens on port 1, so the refusal is immediate.
    url = "postgresql+psycopg://postgres:s3cret@127.0.0.1:1/x"
    config = write_config({"database": {"connection": url,
                                        "connect_timeout": 5}})
    result = run_console_script(MANAGE, "db", "sync", config_file=config)
    assert result.returncode == 1, result
    line = _one_line_error(result)
    assert "127.0.0.1:1" in line
    assert "refused" in line.lower()
    # [database] connection is a secret option.
    assert "s3cret" not in line


def test_database_from_newer_code_is_one_line(
        run_console_script: ScriptRunner, write_config: ConfigWriter,
        sqlite_url: str):
    engine = sa.create_engine(sqlite_url)
    try:
        schema.db_sync(engine)
        with engine.begin() as connection:
            connection.execute(sa.text(
                "UPDATE alembic_version SET version_num = 'ffff'"))
    finally:
        engine.dispose()
    config = write_config({"database": {"connection": sqlite_url}})
    result = run_console_script(MANAGE, "db", "sync", config_file=config)
    assert result.returncode == 1, result
    assert "'ffff'" in _one_line_error(result)


@pytest.mark.parametrize("db_url", ["postgresql", "mysql"], indirect=True)
def test_concurrent_syncs_serialise(start_console_script: ScriptStarter,
                                    write_config: ConfigWriter, db_url: str):
    # Without the lock db sync takes, the loser on PostgreSQL fails
    # creating alembic_version (a catalog unique violation) and on MariaDB
    # finds tables already created. The processes start within
    # milliseconds of each other but only overlap by chance (the start-up
    # takes about a second and varies), so a regression is caught often,
    # not always; with the lock the test cannot fail by chance.
    config = write_config({"database": {"connection": db_url}})
    processes = [start_console_script(MANAGE, "db", "sync",
                                      config_file=config)
                 for _ in range(2)]
    results = [process.wait() for process in processes]
    head = schema.head_version()
    for result in results:
        assert _ok(result) == f"database schema at revision {head}"
    assert _version(db_url) == head
    assert _schema_differences(db_url) == []
