"""``migration-agent``: carries out the moves planned out of this node."""

import sys
from collections.abc import Sequence

from oslo_config import cfg
from oslo_log import log as logging

from compute_monitor import conf as monitor_conf
from compute_monitor.migration import agent as agent_mod
from compute_monitor.migration import conf as agent_conf
from compute_monitor.monitors import libvirt_domains
from scheduler.cmd import common
from scheduler.conf import cli
from scheduler.db import api as db_api

CONF = cfg.CONF
PROG = "migration-agent"
DESCRIPTION = (
    "Carry out the live migrations the balancers planned out of this "
    "node: take them from the migrations table (state planned, within "
    "[migration] max_outgoing_per_host and max_incoming_per_host), "
    "migrate each with libvirt (peer-to-peer) under its migration "
    "policy, record progress and the outcome (completed, failed, "
    "cancelled) and move the claims. Main options: [DEFAULT] host, "
    "[database] connection, [migration_agent] libvirt_uri, "
    "destination_uri, migration_uri, lease, [migration] bandwidth. "
    "A configuration error exits 2.")
LOG = logging.getLogger(__name__)


def _validate(conf: cfg.ConfigOpts) -> None:
    # [migration] policies_file is checked with every option, before.
    db_api.validate_connection_url(conf.database.connection)
    agent_conf.validate(conf)


@cli.quiet_when_output_closes
def main(argv: Sequence[str] | None = None) -> int:
    agent_conf.register_opts(CONF)
    common.prepare(PROG, CONF, argv, "compute_monitor",
                   validators=[_validate], description=DESCRIPTION)
    try:
        libvirt = libvirt_domains.import_libvirt()
    except libvirt_domains.LibvirtUnavailable as e:
        cli.config_error_exit(PROG, str(e))
    agent = agent_mod.MigrationAgent(CONF, libvirt)
    common.stop_on_signals(agent.stop, LOG,
                           "stopping after the running moves")
    LOG.info("Carrying out the moves planned out of %s, every %s s",
             monitor_conf.hypervisor_hostname(CONF),
             CONF.migration_agent.poll_interval)
    agent.run_forever()
    LOG.info("%s stopped", PROG)
    return 0


if __name__ == "__main__":
    sys.exit(main())
