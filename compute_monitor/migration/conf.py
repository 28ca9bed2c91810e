"""Options of the migration agent ([migration_agent] group).

The agent also reads [migration] (max_incoming_per_host,
max_outgoing_per_host, bandwidth, policies_file, cluster_policies,
default_policy: the scheduler's, so give it the same values) and
[compute_monitor] hypervisor_hostname (which node it is: the one its
compute-monitor registers).
"""

from oslo_config import cfg

from compute_monitor import conf as monitor_conf
from scheduler import exception
from scheduler.conf import migration as migration_conf

HOST_FIELD = "{host}"


def _group() -> cfg.OptGroup:
    return cfg.OptGroup(
        "migration_agent",
        title="Migration agent options",
        help="How this node's migration agent reaches the hypervisors and "
        "watches the moves it carries out.",
    )


agent_opts = [
    cfg.StrOpt(
        "libvirt_uri",
        default="qemu:///system",
        help="This node's hypervisor, whose domains the agent migrates.",
    ),
    cfg.StrOpt(
        "destination_uri",
        default="qemu+tls://{host}/system",
        help="libvirt URI of another node's hypervisor, {host} standing "
        "for its host name (the migration's dest_host): the source's "
        "libvirtd opens it itself (peer-to-peer migration), and an agent "
        "reclaiming a dead agent's move asks both nodes through it. "
        "qemu+tls needs libvirt's TLS certificates on every node; "
        "qemu+tcp://{host}/system with SASL, or qemu+ssh, also work.",
    ),
    cfg.StrOpt(
        "migration_uri",
        default="",
        help="Where the guest's memory goes, {host} standing for the "
        "destination's host name, e.g. tcp://{host}-mig for a migration "
        "network of its own. Empty: the destination's libvirtd chooses "
        "(its host name, a port of its migration_port_min..max).",
    ),
    cfg.StrOpt(
        "migration_interface",
        help="Network interface of the migration network: with "
        "[migration] bandwidth auto, its link speed is the bandwidth "
        "shared by the node's running moves. Unset, or a speed the "
        "kernel does not know: auto leaves the bandwidth to libvirt.",
    ),
    cfg.FloatOpt(
        "poll_interval",
        default=1.0,
        min=0.1,
        help="Seconds between two looks at the planned moves, and between "
        "two reads of a running move's job statistics (the convergence "
        "schedule reacts at this pace) and heartbeats.",
    ),
    cfg.IntOpt(
        "lease",
        default=30,
        min=2,
        help="Seconds a running move stays held without a heartbeat from "
        "its agent; then any agent takes it over and ends it by where "
        "the instance runs (a dead agent's move does not stay running). "
        "At least 3 x poll_interval: a live agent misses two heartbeats "
        "before it loses a move it is carrying out.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    """The agent's options, [migration], and the compute monitor's (for
    [DEFAULT] host, [database], [compute_monitor] hypervisor_hostname)."""
    monitor_conf.register_opts(conf)
    migration_conf.register_opts(conf)
    conf.register_group(_group())
    conf.register_opts(agent_opts, group="migration_agent")


#: How many polls (heartbeats) a lease lasts at least.
LEASE_POLLS = 3


def validate(conf: cfg.ConfigOpts) -> None:
    """ConfigError (exit 2) for a destination URI without {host}, or a
    lease shorter than LEASE_POLLS heartbeats."""
    group = conf.migration_agent
    if HOST_FIELD not in group.destination_uri:
        raise exception.ConfigError(
            "migration_agent", "destination_uri", group.destination_uri,
            "a libvirt URI naming the destination as {host}")
    if group.lease < LEASE_POLLS * group.poll_interval:
        raise exception.ConfigError(
            "migration_agent", "lease", group.lease,
            f"at least {LEASE_POLLS} x [migration_agent] poll_interval "
            f"({group.poll_interval}), so that a live agent keeps its moves")


def host_uri(template: str, host: str) -> str:
    """A URI option's template for the node ``host``."""
    return template.replace(HOST_FIELD, host)


def list_opts() -> list:
    """[migration_agent], and [migration] which the agent reads too."""
    return [(_group(), agent_opts), *migration_conf.list_opts().items()]
