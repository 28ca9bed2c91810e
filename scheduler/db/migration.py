"""Schema creation and upgrade with alembic (``scheduler-manage db``)."""

import os

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

from scheduler.db import locks

_SCRIPT_LOCATION = os.path.join(os.path.dirname(__file__), "migrations")
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
