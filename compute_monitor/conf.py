"""Options of the compute monitor agent ([compute_monitor] group)."""

from oslo_config import cfg

from scheduler.conf import cli
from scheduler.conf import database
from scheduler.conf import default


def _group() -> cfg.OptGroup:
    return cfg.OptGroup(
        "compute_monitor",
        title="Compute monitor options",
        help="What the agent measures on this node and how it registers it.",
    )


monitor_opts = [
    cfg.ListOpt(
        "monitors",
        default=["cpu", "memory", "network", "disk"],
        help="Monitor plugins to run, by entry-point name in the "
        "compute_monitor.monitors namespace. Built in: cpu, memory, "
        "network, disk, file, libvirt (per-instance load; needs "
        "libvirt-python).",
    ),
    cfg.IntOpt(
        "interval",
        default=60,
        min=1,
        help="Seconds between two measurement cycles. A plugin still "
        "running after this long is skipped for the cycle.",
    ),
    cfg.StrOpt(
        "file_path",
        default="/etc/compute_monitor/metrics.json",
        help="JSON file read by the file monitor every cycle: either an "
        'object {"metric.name": number, ...} or a list of '
        '{"name": ..., "value": ...} entries.',
    ),
    cfg.StrOpt(
        "libvirt_uri",
        default="qemu:///system",
        help="Hypervisor connection the libvirt monitor reads (read-only), "
        "as libvirt URIs are written: qemu:///system for the local KVM "
        "host, test:///default for libvirt's built-in test driver (a "
        "trial without a hypervisor), test:///path/to/node.xml for a test "
        "driver fleet of your own.",
    ),
    cfg.StrOpt(
        "instances_path",
        default="/",
        help="Filesystem whose size is the node's local disk capacity "
        "(local_gb) and whose usage is local_gb_used.",
    ),
]

node_opts = [
    cfg.StrOpt(
        "hypervisor_hostname",
        help="Node name reported in compute_nodes.hypervisor_hostname. "
        "Defaults to [DEFAULT] host.",
    ),
    cfg.StrOpt("cluster", help="Cluster this node belongs to."),
    cfg.StrOpt(
        "availability_zone",
        default="nova",
        help="Availability zone this node belongs to.",
    ),
    cfg.IntOpt("vcpus", min=1,
               help="Override the number of vCPUs (default: logical CPUs)."),
    cfg.IntOpt("memory_mb", min=1,
               help="Override the memory in MiB (default: physical memory)."),
    cfg.IntOpt("local_gb", min=0,
               help="Override the local disk in GiB (default: size of "
               "instances_path)."),
    cfg.FloatOpt("cpu_allocation_ratio", min=0.0,
                 help="Per-node vCPU allocation ratio; unset uses the "
                 "scheduler's [filter_scheduler] cpu_allocation_ratio."),
    cfg.FloatOpt("ram_allocation_ratio", min=0.0,
                 help="Per-node RAM allocation ratio; unset uses the "
                 "scheduler's."),
    cfg.FloatOpt("disk_allocation_ratio", min=0.0,
                 help="Per-node disk allocation ratio; unset uses the "
                 "scheduler's."),
    cfg.ListOpt("networks", default=[],
                help="Networks this node is attached to, matched by the "
                "scheduler's NetworkFilter against requested networks."),
    cfg.DictOpt(
        "cpu_info",
        default={},
        help="Override or extend the detected CPU description, as "
        "key:value pairs (for example arch:x86_64,vendor:Intel). Matched "
        "by capabilities:cpu_info:<key> extra specs.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register the agent's options plus the shared [DEFAULT]/[database]."""
    default.register_opts(conf)
    database.register_opts(conf)
    conf.register_group(_group())
    conf.register_opts(monitor_opts + node_opts, group="compute_monitor")


def hypervisor_hostname(conf: cfg.ConfigOpts) -> str:
    """This node's name in compute_nodes.hypervisor_hostname: the option,
    else [DEFAULT] host."""
    return conf.compute_monitor.hypervisor_hostname or conf.host


def list_opts() -> list:
    return [
        # --strict is registered by cli.parse, as a command-line option.
        ("DEFAULT", [cli.strict_opt, *default.default_opts]),
        (database._group(), database.database_opts),
        (_group(), monitor_opts + node_opts),
    ]
