"""Schema creation and upgrade with alembic (``scheduler-manage db``).

alembic is imported by the functions that migrate or walk the revisions:
the check every command makes (``schema_problem``) reads the version
table with SQLAlchemy alone when the schema is current, sparing each
``scheduler-manage`` run alembic's import (a sixth of a second of CPU).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import sqlalchemy as sa
from oslo_config import cfg
from sqlalchemy.engine import Engine
from sqlalchemy.engine import make_url

from scheduler.db import api as db_api
from scheduler.db import locks

if TYPE_CHECKING:
    from alembic.config import Config

_SCRIPT_LOCATION = os.path.join(os.path.dirname(__file__), "schema_versions")
# A sync holds the lock only while its migrations run; past this, something
# is stuck and the operator should look.
SYNC_LOCK_TIMEOUT = 600
#: The newest revision under schema_versions/, as alembic finds it
#: (``head_version()``; a unit test keeps them equal).
HEAD_REVISION = "0008"


class MigrationError(Exception):
    """alembic could not migrate the schema (typically a database migrated
    by newer code than this one)."""


def _alembic_config(connection) -> Config:
    from alembic.config import Config

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
        from alembic import command
        from alembic.util import CommandError

        try:
            command.upgrade(_alembic_config(connection), revision)
        except CommandError as e:
            raise MigrationError(str(e)) from e


def db_version(engine: Engine) -> str | None:
    """The schema revision of the database, None before the first sync."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def _stored_revision(engine: Engine) -> str | None:
    """``db_version()`` read with SQLAlchemy alone (one revision: this
    schema has no branches)."""
    with engine.connect() as connection:
        if not sa.inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(sa.text(
            "SELECT version_num FROM alembic_version")).scalar()


def head_version() -> str:
    """The newest revision this code knows."""
    from alembic.script import ScriptDirectory

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
    current = _stored_revision(db_api.get_engine(conf))
    if current == HEAD_REVISION:
        return None
    head = head_version()
    if current == head:
        return None
    if current is None:
        return (f"the database at {url} has no schema: run "
                "'scheduler-manage db sync'")
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_alembic_config(None))
    if current not in {revision.revision
                       for revision in script.walk_revisions()}:
        return (f"the database schema at {url} is at revision {current}, "
                f"unknown to {who} (which knows up to {head}): it was "
                "migrated by a newer version")
    return (f"the database schema at {url} is at revision {current}, "
            f"{who} needs {head}: run 'scheduler-manage db sync'")
