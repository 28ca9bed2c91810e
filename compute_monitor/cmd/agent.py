"""``compute-monitor``: the agent that reports this node's metrics."""

import json
import sys
from collections.abc import Sequence

from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from compute_monitor import agent as agent_mod
from compute_monitor import conf as monitor_conf
from scheduler import exception
from scheduler.cmd import common
from scheduler.conf import cli
from scheduler.db import api as db_api

CONF = cfg.CONF
PROG = "compute-monitor"
DESCRIPTION = (
    "Measure this compute node (CPU, memory, network, disk and operator "
    "metrics, by monitor plugins) and keep its compute_nodes row in the "
    "scheduler's database current, every [compute_monitor] interval "
    "seconds; --once runs one cycle, prints the row and exits. Main "
    "options: [DEFAULT] host, [database] connection (create the schema "
    "with 'scheduler-manage db sync'), [compute_monitor] monitors, "
    "interval, cluster, availability_zone. Check a configuration with "
    "'scheduler-manage --config-file FILE config check'. A configuration "
    "error exits 2.")
LOG = logging.getLogger(__name__)

cli_opts = [
    cfg.BoolOpt("once", default=False,
                help="Run one measurement cycle, print the node's row as "
                "JSON and exit."),
]


def _validate(conf: cfg.ConfigOpts) -> None:
    db_api.validate_connection_url(conf.database.connection)


def format_row(row: dict) -> str:
    """A node row as JSON, one line per column and per metric, so the
    metrics stay readable next to a long cpu_info."""
    lines = []
    for key, value in row.items():
        if key == "metrics":
            entries = ",\n".join(f"    {json.dumps(m)}" for m in value)
            lines.append(f'  "metrics": [\n{entries}\n  ]')
        else:
            lines.append(f"  {json.dumps(key)}: "
                         f"{json.dumps(value, default=str)}")
    return "{\n" + ",\n".join(lines) + "\n}"


@cli.quiet_when_output_closes
def main(argv: Sequence[str] | None = None) -> int:
    monitor_conf.register_opts(CONF)
    CONF.register_cli_opts(cli_opts)
    common.prepare(PROG, CONF, argv, "compute_monitor",
                   validators=[_validate], description=DESCRIPTION)
    try:
        monitors = agent_mod.load_monitors(CONF)
    except exception.ConfigError as e:
        cli.config_error_exit(PROG, str(e))
    agent = agent_mod.MonitorAgent(CONF, monitors)
    if CONF.once:
        try:
            agent.run_cycle()
        except (sa_exc.SQLAlchemyError, exception.SchedulerError) as e:
            print(f"{PROG}: error: {db_api.one_line(e)}", file=sys.stderr)
            return 1
        print(format_row(agent.node_row()))
        return 0
    common.stop_on_signals(agent.stop, LOG)
    LOG.info("Reporting %d monitors (%s) every %d s", len(monitors),
             ", ".join(name for name, _ in monitors),
             CONF.compute_monitor.interval)
    agent.run_forever()
    LOG.info("%s stopped", PROG)
    return 0


if __name__ == "__main__":
    sys.exit(main())
