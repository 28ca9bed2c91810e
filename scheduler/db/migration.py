"""Schema creation and upgrade with alembic (``scheduler-manage db``)."""

import os

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

_SCRIPT_LOCATION = os.path.join(os.path.dirname(__file__), "migrations")


def _alembic_config(connection) -> Config:
    config = Config()
    config.set_main_option("script_location", _SCRIPT_LOCATION)
    config.attributes["connection"] = connection
    return config


def db_sync(engine: Engine, revision: str = "head") -> None:
    """Upgrade the schema to ``revision``; a no-op when already there."""
    with engine.begin() as connection:
        command.upgrade(_alembic_config(connection), revision)


def db_version(engine: Engine) -> str | None:
    """The schema revision of the database, None before the first sync."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_version() -> str:
    """The newest revision this code knows."""
    script = ScriptDirectory.from_config(_alembic_config(None))
    return script.get_current_head()
