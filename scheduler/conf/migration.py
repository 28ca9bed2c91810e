"""Options of the [migration] group: migration policies, bandwidth and
concurrent migrations per host."""

from oslo_config import cfg
from oslo_config import types

from scheduler.conf import policies

BANDWIDTH_AUTO = "auto"
BANDWIDTH_HYPERVISOR_DEFAULT = "hypervisor_default"


class Bandwidth(types.ConfigType):
    """``auto``, ``hypervisor_default`` or a whole number of Mbps > 0."""

    def __init__(self, type_name: str = "bandwidth value"):
        super().__init__(type_name=type_name)

    def __call__(self, value):
        text = str(value).strip()
        if text in (BANDWIDTH_AUTO, BANDWIDTH_HYPERVISOR_DEFAULT):
            return text
        if text.isdigit() and int(text) > 0:
            return int(text)
        raise ValueError(
            f"{value!r} is not auto, hypervisor_default or a whole number "
            "of Mbps greater than 0")

    def __repr__(self) -> str:
        return "Bandwidth"

    def _formatter(self, value) -> str:
        return str(value)


def _group() -> cfg.OptGroup:
    return cfg.OptGroup(
        "migration",
        title="Migration policy options",
        help="How the migrations planned by the balancers run: which "
        "migration policy (convergence schedule), how much bandwidth, how "
        "many at a time per host.",
    )


migration_opts = [
    cfg.StrOpt(
        "policies_file",
        help="JSON file of custom migration policies: a list of objects "
        "with id, name, description, maxMigrations, autoConvergence, "
        "migrationCompression, enableGuestEvents and config "
        "{initialItems, convergenceItems, lastItems} (schema: "
        "scheduler/schemas/migration_policies.json). Ids must differ from "
        "the built-ins (legacy, minimal_downtime, post_copy, "
        "suspend_workload_if_needed). Unset: built-ins only.",
    ),
    cfg.StrOpt(
        "default_policy",
        default="minimal_downtime",
        help="Id of the migration policy of clusters that cluster_policies "
        "does not map.",
    ),
    cfg.Opt(
        "cluster_policies",
        type=policies.ClusterMapping(),
        default={},
        help="Migration policy of each cluster, as cluster:policy_id "
        "pairs, e.g. rack-a:post_copy. A request may still name its own.",
    ),
    cfg.Opt(
        "bandwidth",
        type=Bandwidth(),
        default=BANDWIDTH_AUTO,
        help="Bandwidth of the migrations of one host: auto (the link "
        "speed of the host's migration network when known, else the "
        "hypervisor's default), hypervisor_default (the hypervisor "
        "decides), or a number of Mbps. Each migration gets this divided "
        "by the policy's maxMigrations.",
    ),
    cfg.IntOpt(
        "max_incoming_per_host",
        default=2,
        min=1,
        help="Migrations a host may receive at the same time.",
    ),
    cfg.IntOpt(
        "max_outgoing_per_host",
        default=2,
        min=1,
        help="Migrations a host may send at the same time.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(_group())
    conf.register_opts(migration_opts, group="migration")


def list_opts() -> dict:
    return {_group(): migration_opts}
