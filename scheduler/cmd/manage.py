"""``scheduler-manage``: operator commands (schema, hosts, explain,
balance, config check, demo)."""

import datetime
import os
import sys
from collections.abc import Sequence

from alembic.util import CommandError
from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from compute_monitor import conf as monitor_conf
from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler.cmd import common
from scheduler.cmd import demo as demo_mod
from scheduler.cmd import manage_args
from scheduler.cmd import metrics as metrics_cmd
from scheduler.cmd import migration_policy as migration_policy_cmd
from scheduler.cmd import output
from scheduler.cmd import permission as permission_cmd
from scheduler.cmd import simulate as simulate_cmd
from scheduler.conf import cli
from scheduler.conf import messaging as messaging_conf
from scheduler.db import api as db_api
from scheduler.db import locks
from scheduler.db import models
from scheduler.db import schema
from scheduler.engine import filter_scheduler
from scheduler.hosts.cache.manager import HostManager
from scheduler.hosts.state import HostState
from scheduler.placement.balance_planner import BalancePlanner
from scheduler.policies import store as policy_store
from scheduler.request import extra_specs as extra_specs_mod
from scheduler.request.spec import RequestSpec

CONF = scheduler_conf.CONF
PROG = "scheduler-manage"


def _validate_database(conf: cfg.ConfigOpts) -> None:
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
    print(output.hosts([output.host_record(h, now, down_after)
                        for h in hosts], conf.category.format))
    return 0


def _find_host(hosts: Sequence[HostState], name: str) -> HostState:
    """The node named ``name``, else the only node of host ``name``;
    raises LookupError with the one-line reason otherwise."""
    by_node = [h for h in hosts if h.nodename == name]
    found = by_node or [h for h in hosts if h.host == name]
    if not found:
        raise LookupError(f"no compute node {name!r} ({len(hosts)} known; "
                          "see hosts list)")
    if len(found) > 1:
        raise LookupError(
            f"host {name!r} has {len(found)} nodes; name one of "
            f"{', '.join(sorted(h.nodename for h in found))}")
    return found[0]


def hosts_show(conf: cfg.ConfigOpts) -> int:
    """One compute node, by node name or host name, in full."""
    hosts, now, down_after = _host_states(conf)
    try:
        host = _find_host(hosts, conf.category.node)
    except LookupError as e:
        print(f"{PROG}: error: {e.args[0]}", file=sys.stderr)
        return 1
    print(output.host(output.host_detail(host, now, down_after),
                      conf.category.format))
    return 0


def _explain_spec(conf: cfg.ConfigOpts) -> RequestSpec:
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
    and weighers of the cluster's policy; nothing claimed."""
    try:
        spec = _explain_spec(conf)
        # Stored policies (scheduler-api) included, as the service has them.
        policy = policy_store.current_policy_set(conf).for_cluster(
            spec.cluster)
        scheduler = filter_scheduler.FilterScheduler(
            conf, pipeline=None if policy is None else policy.pipeline())
        decision = scheduler.explain(spec)
    except (exception.ConfigError, exception.InvalidRequest) as e:
        cli.config_error_exit(PROG, str(e))
    print(output.explain(decision.as_dict(), conf.category.format))
    return 0


def balance(conf: cfg.ConfigOpts) -> int:
    """One balancing tick now, as the service's periodic task runs it
    (without its notifications); ``--dry-run`` claims and records
    nothing."""
    args = conf.category
    try:
        planner = BalancePlanner(
            conf, policies=policy_store.current_policy_set(conf))
        planned = planner.balance(
            args.cluster, args.dry_run,
            migration_policy=args.migration_policy)
    except exception.InvalidRequest as e:
        cli.config_error_exit(PROG, str(e))
    print(output.migrations([m.as_dict() for m in planned], args.format,
                            args.dry_run))
    return 0


def config_check(conf: cfg.ConfigOpts) -> int:
    """Every configuration problem, one line each on stdout; exit 2 if
    there is any. Starts nothing; reads from the database only the metric
    names the fleet reports."""
    # Here: it imports oslo.messaging, which the other commands never need.
    from scheduler.cmd import config_check as check

    notes: list[str] = []
    problems = check.problems(conf, notes)
    for line in problems:
        print(line)
    for note in notes:
        print(f"{PROG}: note: {note}", file=sys.stderr)
    if problems:
        files = ", ".join(conf.config_file) or "the defaults"
        print(f"{PROG}: error: {len(problems)} configuration problem(s) in "
              f"{files}", file=sys.stderr)
        return cli.CONFIG_ERROR_EXIT
    print("configuration OK")
    return 0


def demo(conf: cfg.ConfigOpts) -> int:
    """Everything in one process on embedded defaults: its own SQLite file
    under state_path and the in-memory transport, whatever the config
    file says, so a demo never touches a real deployment."""
    monitor_conf.register_opts(conf)
    messaging_conf.register_messaging_opts(conf)
    conf.set_override("connection",
                      f"sqlite:///{conf.state_path}/demo.sqlite",
                      group="database")
    conf.set_override("transport_url", "kombu+memory:////")
    conf.set_override("weight_classes", ["RAMWeigher", "CPUWeigher",
                                         "MetricsWeigher", "ResourcesWeigher"],
                      group="filter_scheduler")
    conf.set_override("weight_setting", "cpu.percent=-1.0",
                      group="metrics")
    return demo_mod.run(conf)


# One long function on purpose: it is a table of the subcommands and
# their options, read top to bottom like the --help it produces.
def _add_command_parsers(subparsers) -> None:
    _add_db_parsers(subparsers)
    _add_hosts_parsers(subparsers)
    _add_explain_parser(subparsers)
    _add_balance_parser(subparsers)
    metrics_cmd.add_parser(subparsers)
    permission_cmd.add_parser(subparsers)
    migration_policy_cmd.add_parser(subparsers)
    config = subparsers.add_parser("config", help="Configuration commands.")
    config_actions = config.add_subparsers(dest="action", metavar="ACTION")
    config_actions.required = True
    config_actions.add_parser(
        "check", help="Check every option, policy and the migration "
        "policies file; list every problem, one per line (exit 2), or "
        "print 'configuration OK'. Connects to nothing.",
    ).set_defaults(func=config_check)
    simulate_cmd.add_parser(subparsers)
    subparsers.add_parser(
        "demo", help="Run the monitor, the scheduler service and a client "
        "in one process on embedded defaults (SQLite, in-memory bus) and "
        "print a few decisions.").set_defaults(func=demo)


def _add_db_parsers(subparsers) -> None:
    db = subparsers.add_parser("db", help="Database schema commands.")
    db_actions = db.add_subparsers(dest="action", metavar="ACTION")
    db_actions.required = True
    db_actions.add_parser(
        "sync", help="Create or upgrade the schema to the newest revision."
    ).set_defaults(func=db_sync)
    db_actions.add_parser(
        "version", help="Print the schema revision of the database."
    ).set_defaults(func=db_version)


def _add_hosts_parsers(subparsers) -> None:
    hosts = subparsers.add_parser("hosts", help="Compute node commands.")
    hosts_actions = hosts.add_subparsers(dest="action", metavar="ACTION")
    hosts_actions.required = True
    hosts_list_parser = hosts_actions.add_parser(
        "list", help="Capacity, free resources, pending claims, metric "
        "age and state of every compute node.")
    hosts_list_parser.add_argument("--format", choices=output.FORMATS,
                                   default="table")
    hosts_list_parser.set_defaults(func=hosts_list)
    hosts_show_parser = hosts_actions.add_parser(
        "show", help="One compute node in full: every metric with its "
        "age, source and pending-adjusted value, malformed metrics, "
        "cpu_info, networks, instances and server groups.")
    # Not "host": [DEFAULT] host is an option of the same namespace.
    hosts_show_parser.add_argument("node", metavar="HOST",
                                   help="node name, or host name of a "
                                   "host with a single node")
    hosts_show_parser.add_argument("--format", choices=output.FORMATS,
                                   default="table")
    hosts_show_parser.set_defaults(func=hosts_show)


def _add_explain_parser(subparsers) -> None:
    explain_parser = subparsers.add_parser(
        "explain", help="Dry-run one placement against the database and "
        "show why each host was removed or how it was weighed. Claims "
        "nothing.")
    explain_parser.add_argument("--vcpus", type=int, default=1,
                                help="vCPUs of the flavor (default: "
                                "%(default)s)")
    explain_parser.add_argument("--ram", type=int, default=512,
                                help="RAM of the flavor in MB (default: "
                                "%(default)s)")
    explain_parser.add_argument("--disk", type=int, default=1,
                                help="root disk of the flavor in GB "
                                "(default: %(default)s)")
    explain_parser.add_argument(
        "--extra-spec", action="append", metavar="KEY=VALUE",
        help="flavor extra spec, repeatable; split at the first '=', "
        "e.g. 'resources:network.rx.bps=<85M' (default: none)")
    explain_parser.add_argument(
        "--cluster", help="place in this cluster, with its cluster "
        "policy (default: any cluster, [scheduler] default_policy)")
    explain_parser.add_argument("--az", help="availability zone (default: "
                                "any)")
    explain_parser.add_argument("--format", choices=output.FORMATS,
                                default="table", help="output format "
                                "(default: %(default)s)")
    explain_parser.set_defaults(func=explain)


def _add_balance_parser(subparsers) -> None:
    balance_parser = subparsers.add_parser(
        "balance", help="Run one balancing tick now: at most one migration "
        "per cluster whose policy has a balancer, claimed and recorded.")
    balance_parser.add_argument("--cluster",
                                help="balance this cluster only")
    balance_parser.add_argument("--dry-run", action="store_true",
                                help="decide, but claim and record nothing")
    balance_parser.add_argument(
        "--migration-policy", metavar="ID",
        help="migration policy of the planned migrations (default: their "
        "cluster's, [migration] cluster_policies / default_policy)")
    balance_parser.add_argument("--format", choices=output.FORMATS,
                                default="table")
    balance_parser.set_defaults(func=balance)


#: Commands that read the schema: a database without it (or a SQLite
#: file that does not exist) is named with what to run, instead of the
#: driver's "no such table", and no empty SQLite file is created.
_READS_SCHEMA = (hosts_list, hosts_show, explain, balance,
                 metrics_cmd.metrics_list, *permission_cmd.COMMANDS)

def _add_commands(subparsers) -> None:
    _add_command_parsers(subparsers)
    manage_args.remember_commands(subparsers)


command_opt = cfg.SubCommandOpt("category", title="Commands",
                                handler=_add_commands)


def main(argv: Sequence[str] | None = None) -> int:
    CONF.register_cli_opt(command_opt)
    args = manage_args.config_options_first(
        sys.argv[1:] if argv is None else argv)
    cli.parse(PROG, CONF, args, "scheduler", manage_args.DESCRIPTION)
    if CONF.category.name is None:
        return manage_args.missing_command(PROG)
    if CONF.category.func is config_check:
        # Collects every problem instead of stopping at the first.
        return config_check(CONF)
    common.validate(PROG, CONF, validators=[_validate_database])
    logging.setup(CONF, "scheduler")
    url = db_api.safe_url(CONF.database.connection)
    # Operators read these on a terminal: one line each, no traceback.
    try:
        if CONF.category.func in _READS_SCHEMA:
            problem = schema.schema_problem(CONF, PROG)
            if problem is not None:
                print(f"{PROG}: error: {problem}", file=sys.stderr)
                return 1
        return CONF.category.func(CONF)
    except BrokenPipeError:
        # The reader went away (``| head``): nothing left to say. Point
        # stdout at /dev/null so that the final flush cannot fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
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
                   f"than {schema.SYNC_LOCK_TIMEOUT} s; is it stuck?")
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
