"""Schema creation and upgrade with alembic (``scheduler-manage db``)."""

import os

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from oslo_config import cfg
from sqlalchemy.engine import Engine
from sqlalchemy.engine import make_url

from scheduler.db import api as db_api
from scheduler.db import locks

_SCRIPT_LOCATION = os.path.join(os.path.dirname(__file__), "schema_versions")
# A sync holds the lock only while its migrations run; past this, something
# is stuck and the operator should look.
SYNC_LOCK_TIMEOUT = 600


def _alembic_config(connection) -> Config:
    config = Config()
    config.set_main_option("script_location", _SCRIPT_LOCATION)
    config.attributes["connection"] = connection
    return config


def db_sync(engine: Engine, revision: str = "head") -> None:
    """Upgrade the schema to ``revision``; a no-op when already there.

    Concurrent syncs run one after the other: unserialised, two syncs of an
    empty PostgreSQL database both create alembic_version, and on MariaDB
    (no transactional DDL) the loser finds tables already there.
    """
    with (locks.database_lock(engine, "scheduler-db-sync",
                              SYNC_LOCK_TIMEOUT),
          engine.begin() as connection):
        command.upgrade(_alembic_config(connection), revision)


def db_version(engine: Engine) -> str | None:
    """The schema revision of the database, None before the first sync."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_version() -> str:
    """The newest revision this code knows."""
    script = ScriptDirectory.from_config(_alembic_config(None))
    return script.get_current_head()


def missing_sqlite_file(url: str) -> str | None:
    """The path of a SQLite database file that does not exist yet."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (
            None, "", ":memory:"):
        return None
    return None if os.path.exists(parsed.database) else parsed.database


def schema_problem(conf: cfg.ConfigOpts, who: str) -> str | None:
    """Why the database of ``[database] connection`` cannot serve ``who``
    (``"scheduler-manage"``, ``"this agent"``), as one line telling what to
    run; None when its schema is the newest this code knows.

    A SQLite file that does not exist is reported without connecting:
    connecting would create it, empty, as a side effect of a read.
    """
    url = db_api.safe_url(conf.database.connection)
    path = missing_sqlite_file(conf.database.connection)
    if path is not None:
        return (f"no database at {url} (the file {path} does not exist): "
                "run 'scheduler-manage db sync' to create it")
    current = db_version(db_api.get_engine(conf))
    head = head_version()
    if current == head:
        return None
    if current is None:
        return (f"the database at {url} has no schema: run "
                "'scheduler-manage db sync'")
    script = ScriptDirectory.from_config(_alembic_config(None))
    if current not in {revision.revision
                       for revision in script.walk_revisions()}:
        return (f"the database schema at {url} is at revision {current}, "
                f"unknown to {who} (which knows up to {head}): it was "
                "migrated by a newer version")
    return (f"the database schema at {url} is at revision {current}, "
            f"{who} needs {head}: run 'scheduler-manage db sync'")
