"""``scheduler-manage``: operator commands (database schema, ...)."""

import sys
from collections.abc import Sequence

from alembic.util import CommandError
from oslo_config import cfg
from sqlalchemy import exc as sa_exc

from scheduler import conf as scheduler_conf
from scheduler.cmd import common
from scheduler.db import api as db_api
from scheduler.db import locks
from scheduler.db import migration

CONF = scheduler_conf.CONF
PROG = "scheduler-manage"


def _validate_database(conf: cfg.ConfigOpts) -> None:
    db_api.validate_connection_url(conf.database.connection)


def db_sync(conf: cfg.ConfigOpts) -> int:
    engine = db_api.get_engine(conf)
    migration.db_sync(engine)
    print(f"database schema at revision {migration.db_version(engine)}")
    return 0


def db_version(conf: cfg.ConfigOpts) -> int:
    print(migration.db_version(db_api.get_engine(conf)) or "None")
    return 0


def _add_command_parsers(subparsers) -> None:
    db = subparsers.add_parser("db", help="Database schema commands.")
    db_actions = db.add_subparsers(dest="action", metavar="ACTION")
    db_actions.required = True
    db_actions.add_parser(
        "sync", help="Create or upgrade the schema to the newest revision."
    ).set_defaults(func=db_sync)
    db_actions.add_parser(
        "version", help="Print the schema revision of the database."
    ).set_defaults(func=db_version)


command_opt = cfg.SubCommandOpt("category", title="Command categories",
                                handler=_add_command_parsers)


def main(argv: Sequence[str] | None = None) -> int:
    CONF.register_cli_opt(command_opt)
    common.prepare(PROG, CONF, argv, "scheduler",
                   validators=[_validate_database])
    url = db_api.safe_url(CONF.database.connection)
    # Operators read these on a terminal: one line each, no traceback.
    try:
        return CONF.category.func(CONF)
    except sa_exc.SQLAlchemyError as e:
        # Not "unreachable": drivers raise OperationalError for refused
        # connections and for "table already exists" (PyMySQL) alike; the
        # driver's own message tells which.
        message = f"database error at {url}: {db_api.one_line(e)}"
    except CommandError as e:
        # Typically a database migrated by newer code than this one.
        message = f"cannot migrate the schema at {url}: {db_api.one_line(e)}"
    except locks.LockTimeout:
        message = (f"another db sync on {url} held the schema lock for more "
                   f"than {migration.SYNC_LOCK_TIMEOUT} s; is it stuck?")
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
