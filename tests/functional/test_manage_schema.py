"""``scheduler-manage`` on a database without the schema: one line
saying to run ``db sync``, and no SQLite file created by a read."""

import pytest
import sqlalchemy as sa

from scheduler.db import schema

READS = [("hosts", "list"), ("hosts", "show", "node-1"), ("explain",),
         ("balance", "--dry-run")]
DB_SYNC = "run 'scheduler-manage db sync'"


@pytest.mark.parametrize("command", READS, ids=" ".join)
def test_missing_sqlite_file_is_named_not_created(command, tmp_path,
                                                  write_config,
                                                  run_console_script):
    database = tmp_path / "absent" / "scheduler.sqlite"
    config = write_config({"database": {
        "connection": f"sqlite:///{database}"}})
    result = run_console_script("scheduler-manage", *command,
                                config_file=config)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"scheduler-manage: error: no database at sqlite:///{database} "
        f"(the file {database} does not exist): {DB_SYNC} to create it"]
    assert not database.parent.exists()


def test_db_version_of_a_missing_sqlite_file(tmp_path, write_config,
                                             run_console_script):
    database = tmp_path / "scheduler.sqlite"
    config = write_config({"database": {
        "connection": f"sqlite:///{database}"}})
    result = run_console_script("scheduler-manage", "db", "version",
                                config_file=config)
    assert (result.returncode, result.stdout) == (0, "None\n")
    assert not database.exists()


@pytest.mark.parametrize("command", READS, ids=" ".join)
def test_database_without_schema(command, db_url, write_config,
                                 run_console_script):
    if db_url.startswith("sqlite:///"):
        # An existing, empty file.
        sa.create_engine(db_url).connect().close()
    config = write_config({"database": {"connection": db_url}})
    result = run_console_script("scheduler-manage", *command,
                                config_file=config)
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("scheduler-manage: error: the database at ")
    assert line.endswith(f" has no schema: {DB_SYNC}")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_database_behind_the_code(db_url, write_config, run_console_script):
    engine = sa.create_engine(db_url)
    schema.db_sync(engine, "0001")
    engine.dispose()
    config = write_config({"database": {"connection": db_url}})
    result = run_console_script("scheduler-manage", "hosts", "list",
                                config_file=config)
    assert result.returncode == 1
    assert result.stderr.endswith(
        f"is at revision 0001, scheduler-manage needs "
        f"{schema.head_version()}: {DB_SYNC}\n")
