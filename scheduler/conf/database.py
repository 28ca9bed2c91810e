"""Options of the [database] group: where compute nodes and claims live."""

from oslo_config import cfg


def _group() -> cfg.OptGroup:
    return cfg.OptGroup(
        "database",
        title="Database options",
        help="The SQL database shared by compute monitors and schedulers.",
    )


database_opts = [
    cfg.StrOpt(
        "connection",
        default="sqlite:///$state_path/scheduler.sqlite",
        secret=True,
        help="SQLAlchemy URL of the database. Supported: SQLite "
        "(sqlite:///path), PostgreSQL (postgresql+psycopg://user@host/db) "
        "and MariaDB/MySQL (mysql+pymysql://user@host/db).",
    ),
    cfg.IntOpt(
        "max_retry_interval",
        default=30,
        min=1,
        help="Longest wait, in seconds, between attempts to reach the "
        "database after it became unreachable. Waits start at one second "
        "and double up to this bound.",
    ),
    cfg.IntOpt(
        "connect_timeout",
        default=10,
        min=1,
        help="Seconds to wait for a new database connection before the "
        "attempt counts as failed.",
    ),
    cfg.BoolOpt(
        "sqlite_synchronous",
        default=True,
        help="SQLite only: wait at each commit until the data is on disk "
        "(PRAGMA synchronous=FULL). False (synchronous=OFF) commits "
        "several times faster but a power failure or an operating system "
        "crash can lose the last commits, claims included: only for "
        "throwaway databases such as the simulator's scratch file.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(_group())
    conf.register_opts(database_opts, group="database")


def list_opts() -> dict:
    return {_group(): database_opts}
