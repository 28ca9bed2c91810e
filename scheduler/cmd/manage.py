"""``scheduler-manage``: operator commands (schema, hosts, explain,
balance, config check, demo)."""

import sys
from collections.abc import Callable
from collections.abc import Sequence

from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler.cmd import manage_args
from scheduler.cmd import metrics as metrics_cmd
from scheduler.cmd import migration_policy as migration_policy_cmd
from scheduler.cmd import migrations as migrations_cmd
from scheduler.cmd import permission as permission_cmd
from scheduler.cmd import simulate as simulate_cmd
from scheduler.cmd import tune as tune_cmd
from scheduler.conf import cli

CONF = scheduler_conf.CONF
PROG = "scheduler-manage"


def _deferred(name: str) -> Callable[[cfg.ConfigOpts], int]:
    """The command ``name`` of manage_commands, imported when it runs:
    building the parser (``--help``, ``--version``) imports no database,
    engine or service code."""
    def command(conf: cfg.ConfigOpts) -> int:
        from scheduler.cmd import manage_commands

        return getattr(manage_commands, name)(conf)

    command.__name__ = command.__qualname__ = name
    return command


db_sync = _deferred("db_sync")
db_version = _deferred("db_version")
hosts_list = _deferred("hosts_list")
hosts_show = _deferred("hosts_show")
explain = _deferred("explain")
balance = _deferred("balance")
demo = _deferred("demo")


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
    migrations_cmd.add_parser(subparsers)
    config = subparsers.add_parser("config", help="Configuration commands.")
    config_actions = config.add_subparsers(dest="action", metavar="ACTION")
    config_actions.required = True
    config_actions.add_parser(
        "check", help="Check every option, policy and the migration "
        "policies file; list every problem, one per line (exit 2), or "
        "print 'configuration OK'. Starts nothing and contacts no broker; "
        "reads the database only for the metric names the fleet reports "
        "(weight_setting), with a note on stderr when it cannot.",
    ).set_defaults(func=config_check)
    simulate_cmd.add_parser(subparsers)
    tune_cmd.add_parser(subparsers)
    subparsers.add_parser(
        "demo", help="Run the monitor, the scheduler service and a client "
        "in one process on embedded defaults (SQLite, in-memory bus) and "
        "print a few decisions, with why each host was chosen. Its "
        "database is $state_path/demo.sqlite ([DEFAULT] state_path, "
        "~/.local/state/metrics-scheduler by default), whatever [database] "
        "connection says; each run starts from the same simulated fleet."
    ).set_defaults(func=demo)


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
    manage_args.add_format(hosts_list_parser)
    hosts_list_parser.set_defaults(func=hosts_list)
    hosts_show_parser = hosts_actions.add_parser(
        "show", help="One compute node in full: every metric with its "
        "age, source and pending-adjusted value, malformed metrics, "
        "cpu_info, networks, instances and server groups.")
    # Not "host": [DEFAULT] host is an option of the same namespace.
    hosts_show_parser.add_argument("node", metavar="HOST",
                                   help="node name, or host name of a "
                                   "host with a single node")
    manage_args.add_format(hosts_show_parser)
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
    manage_args.add_format(explain_parser)
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
    manage_args.add_format(balance_parser)
    balance_parser.set_defaults(func=balance)


#: Commands that read the schema: a database without it (or a SQLite
#: file that does not exist) is named with what to run, instead of the
#: driver's "no such table", and no empty SQLite file is created.
_READS_SCHEMA = (hosts_list, hosts_show, explain, balance,
                 metrics_cmd.metrics_list, *permission_cmd.COMMANDS,
                 *migrations_cmd.COMMANDS)


def _add_commands(subparsers) -> None:
    _add_command_parsers(subparsers)
    manage_args.remember_commands(subparsers)
    # oslo.config keeps the top-level parser only there.
    manage_args.commands_first(CONF._oparser, subparsers)


command_opt = cfg.SubCommandOpt("category", title="Commands",
                                handler=_add_commands)


@cli.quiet_when_output_closes
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
    # Here: the commands' modules (the database, the engine, the
    # policies' schemas), which --help and --version never need.
    from scheduler.cmd import common
    from scheduler.cmd import manage_commands

    common.validate(PROG, CONF,
                    validators=[manage_commands.validate_database])
    common.start_logging(PROG, CONF, "scheduler")
    return manage_commands.run(CONF, CONF.category.func,
                               CONF.category.func in _READS_SCHEMA)

if __name__ == "__main__":
    sys.exit(main())
