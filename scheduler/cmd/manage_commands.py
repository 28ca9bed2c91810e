"""The commands of ``scheduler-manage`` that need the database, the
engine or the service, and the one-line report of their database errors.

Apart from manage.py, which builds the parser: this module imports
SQLAlchemy, alembic and the engine, which ``--help``, ``--version`` and
``config check`` never need (issue 30: 1.8 s of CPU before any command).
"""

from __future__ import annotations

import datetime
import sys
from collections.abc import Callable
from collections.abc import Sequence
from typing import TYPE_CHECKING

from oslo_config import cfg
from sqlalchemy import exc as sa_exc

from scheduler import exception
from scheduler.cmd import output
from scheduler.conf import cli
from scheduler.db import api as db_api
from scheduler.db import locks
from scheduler.db import models
from scheduler.db import schema
from scheduler.hosts import problems
from scheduler.hosts import records
from scheduler.hosts.cache.manager import HostManager

if TYPE_CHECKING:
    from scheduler.hosts.state import HostState
    from scheduler.request.spec import RequestSpec

PROG = "scheduler-manage"


def validate_database(conf: cfg.ConfigOpts) -> None:
    db_api.validate_connection_url(conf.database.connection)


def db_sync(conf: cfg.ConfigOpts) -> int:
    engine = db_api.get_engine(conf)
    schema.db_sync(engine)
    print(f"database schema at revision {schema.db_version(engine)}")
    return 0


def db_version(conf: cfg.ConfigOpts) -> int:
    # A SQLite file that does not exist has no schema; connecting would
    # create it.
    if schema.missing_sqlite_file(conf.database.connection):
        print("None")
        return 0
    print(schema.db_version(db_api.get_engine(conf)) or "None")
    return 0


def _host_states(conf: cfg.ConfigOpts
                 ) -> tuple[Sequence[HostState], datetime.datetime, int]:
    return (HostManager(conf).host_states(), models.utcnow(),
            conf.filter_scheduler.service_down_time)


def hosts_list(conf: cfg.ConfigOpts) -> int:
    hosts, now, down_after = _host_states(conf)
    print(output.hosts([records.host_record(h, now, down_after)
                        for h in hosts], conf.category.format))
    if not hosts:
        print(f"{PROG}: note: {problems.no_host_registered(conf)}",
              file=sys.stderr)
    return 0


def hosts_show(conf: cfg.ConfigOpts) -> int:
    """One compute node, by node name or host name, in full."""
    hosts, now, down_after = _host_states(conf)
    try:
        host = records.find_host(hosts, conf.category.node)
    except LookupError as e:
        print(f"{PROG}: error: {e.args[0]}", file=sys.stderr)
        return 1
    print(output.host(records.host_detail(host, now, down_after),
                      conf.category.format))
    return 0


def _explain_spec(conf: cfg.ConfigOpts) -> RequestSpec:
    from scheduler.request import extra_specs as extra_specs_mod
    from scheduler.request.spec import RequestSpec

    args = conf.category
    extra_specs = {}
    for item in args.extra_spec or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise extra_specs_mod.InvalidExtraSpec(
                item, "", "KEY=VALUE (split at the first '=')")
        extra_specs[key.strip()] = value
    return RequestSpec.from_dict({
        "flavor": {"name": "explain", "vcpus": args.vcpus,
                   "memory_mb": args.ram, "root_gb": args.disk,
                   "extra_specs": extra_specs},
        "availability_zone": args.az,
        "cluster": args.cluster,
    }, scope=conf.metrics.extra_specs_scope)


def explain(conf: cfg.ConfigOpts) -> int:
    """A dry run of one placement against the database, with the filters
    and weighers of the cluster's policy; nothing claimed. An empty
    fleet or an unknown cluster is one line and status 1 instead."""
    # Here, as balance's: the engine and the policies are these two
    # commands' alone (a third of a second of CPU for the others).
    from scheduler.policies import explain as dry_run

    try:
        spec = _explain_spec(conf)
        # Stored policies (scheduler-api) included, as the service has them.
        explained = dry_run.explain(conf, spec)
    except (exception.ConfigError, exception.InvalidRequest) as e:
        cli.config_error_exit(PROG, str(e))
    problem, document = explained.problem, explained.document
    if problem is not None:
        print(f"{PROG}: error: {problem}", file=sys.stderr)
        return 1
    print(output.explain(document, conf.category.format))
    if conf.category.format != "json":
        # JSON carries them; stderr is where a person looks for warnings.
        for warning in document["warnings"]:
            print(f"{PROG}: warning: {warning}", file=sys.stderr)
    return 0


def balance(conf: cfg.ConfigOpts) -> int:
    """One balancing tick now, as the service's periodic task runs it
    (without its notifications); ``--dry-run`` claims and records
    nothing."""
    from scheduler.placement.balance_planner import BalancePlanner
    from scheduler.policies import store as policy_store

    args = conf.category
    try:
        planner = BalancePlanner(
            conf, policies=policy_store.current_policy_set(conf))
        planned = planner.balance(
            args.cluster, args.dry_run,
            migration_policy=args.migration_policy)
    except exception.InvalidRequest as e:
        cli.config_error_exit(PROG, str(e))
    if not planned:
        # Nothing planned may mean nothing to plan on: said, as explain.
        hosts = HostManager(conf).host_states()
        if hosts and (problem := problems.unknown_cluster(args.cluster,
                                                         hosts)):
            print(f"{PROG}: error: {problem}", file=sys.stderr)
            return 1
        if not hosts:
            print(f"{PROG}: note: {problems.no_host_registered(conf)}",
                  file=sys.stderr)
    print(output.migrations([m.as_dict() for m in planned], args.format,
                            args.dry_run))
    return 0


def demo(conf: cfg.ConfigOpts) -> int:
    """Everything in one process on embedded defaults: its own SQLite file
    under state_path and the in-memory transport, whatever the config
    file says, so a demo never touches a real deployment."""
    # Here: the monitor and the RPC service (psutil, eventlet) are the
    # demo's alone.
    from compute_monitor import conf as monitor_conf
    from scheduler.cmd import demo as demo_mod
    from scheduler.conf import messaging as messaging_conf

    monitor_conf.register_opts(conf)
    messaging_conf.register_messaging_opts(conf)
    demo_mod.configure(conf)
    return demo_mod.run(conf)


def run(conf: cfg.ConfigOpts, command: Callable[[cfg.ConfigOpts], int],
        reads_schema: bool) -> int:
    """``command``'s exit status; a database error, a schema that cannot
    be migrated or (``reads_schema``) a database without the schema is
    one line on stderr and status 1, never a traceback."""
    url = db_api.safe_url(conf.database.connection)
    try:
        if reads_schema:
            # Named with what to run, instead of the driver's "no such
            # table", and no empty SQLite file is created.
            problem = schema.schema_problem(conf, PROG)
            if problem is not None:
                print(f"{PROG}: error: {problem}", file=sys.stderr)
                return 1
        return command(conf)
    except sa_exc.SQLAlchemyError as e:
        # Not "unreachable": drivers raise OperationalError for refused
        # connections and for "table already exists" (PyMySQL) alike; the
        # driver's own message tells which.
        message = f"database error at {url}: {db_api.one_line(e)}"
    except schema.MigrationError as e:
        # Typically a database migrated by newer code than this one.
        message = f"cannot migrate the schema at {url}: {db_api.one_line(e)}"
    except locks.LockTimeout:
        message = (f"another db sync on {url} held the schema lock for more "
                   f"than {schema.SYNC_LOCK_TIMEOUT} s; is it stuck?")
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 1
