"""Options of cluster policies: [scheduler] cluster_policies and
default_policy, the dynamic [policy:NAME] groups, and [balancer].

``[policy:NAME]`` groups cannot be registered up front: their names are
whatever the operator wrote. ``register_policy_groups`` finds them in the
parsed config files and registers ``policy_opts`` on each.
"""

from oslo_config import cfg
from oslo_config import types

#: Prefix of the config-file sections that define cluster policies.
POLICY_GROUP_PREFIX = "policy:"


class ClusterMapping(types.ConfigType):
    """``cluster:name, cluster:name`` -> dict, each cluster at most once."""

    def __init__(self, type_name: str = "cluster mapping value"):
        super().__init__(type_name=type_name)

    def __call__(self, value):
        if isinstance(value, dict):
            return value
        mapping: dict[str, str] = {}
        for item in (p.strip() for p in str(value).split(",")):
            if not item:
                continue
            cluster, sep, name = (s.strip() for s in item.partition(":"))
            if not sep or not cluster or not name:
                raise ValueError(f"{item!r} is not cluster:name")
            if cluster in mapping:
                raise ValueError(f"cluster {cluster!r} is mapped twice")
            mapping[cluster] = name
        return mapping

    def __repr__(self) -> str:
        return "ClusterMapping"

    def _formatter(self, value) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{cluster}:{name}"
                             for cluster, name in value.items())
        return str(value)


def _balancer_group() -> cfg.OptGroup:
    return cfg.OptGroup(
        "balancer",
        title="Load balancing options",
        help="The periodic balancing of clusters whose policy has a "
        "balancer.",
    )


scheduler_policy_opts = [
    cfg.Opt(
        "cluster_policies",
        type=ClusterMapping(),
        default={},
        help="Cluster policy of each cluster, as cluster:policy pairs, e.g. "
        "rack-a:power_saving, rack-b:evenly_distributed. A policy is a "
        "built-in (none, evenly_distributed, power_saving, "
        "vm_evenly_distributed, steady_load) or a [policy:NAME] group of "
        "this file, which may set: filters (entry-point names of "
        "scheduler.filters; suffix :first or :last to run a filter first or"
        " last, the others run in the given order), weighers (Name:factor "
        "with an integer factor, negative allowed, multiplying the "
        "weigher's own multiplier), normalization (minmax, rank, hardmax or"
        " none), balancer (entry-point name of scheduler.balancers, or "
        "none) and balancer_parameters (Name:value, e.g. "
        "HighUtilization:80, CpuOverCommitDurationMinutes:2). Options a "
        "group leaves out come from the built-in policy of that name, else "
        "from [filter_scheduler].",
    ),
    cfg.StrOpt(
        "default_policy",
        help="Policy of clusters that cluster_policies does not map. "
        "Unset: they use [filter_scheduler] and are never balanced.",
    ),
]

balancer_opts = [
    cfg.IntOpt(
        "interval",
        default=60,
        min=0,
        help="Seconds between two balancing ticks of scheduler-service. "
        "Each tick plans at most one migration per cluster. 0 turns "
        "periodic balancing off (scheduler-manage balance still works).",
    ),
]

policy_opts = [
    cfg.ListOpt("filters",
                help="Filters of the policy; NAME:first or NAME:last runs "
                "a filter first or last. Unset: the built-in policy's, "
                "else [filter_scheduler] enabled_filters."),
    cfg.ListOpt("weighers",
                help="Weighers of the policy as Name:factor, integer "
                "factors. Unset: the built-in policy's, else "
                "[filter_scheduler] weight_classes with factor 1."),
    cfg.StrOpt("normalization",
               help="minmax, rank, hardmax or none. Unset: the built-in "
               "policy's, else [filter_scheduler] weight_normalization."),
    cfg.StrOpt("balancer",
               help="Entry-point name in scheduler.balancers, or none."),
    cfg.ListOpt("balancer_parameters",
                help="Parameters of the balancer as Name:value pairs."),
]


def policy_group_names(conf: cfg.ConfigOpts) -> list[str]:
    """Names of the [policy:NAME] sections of the parsed config files."""
    return sorted(section for section in conf.list_all_sections()
                  if section.startswith(POLICY_GROUP_PREFIX))


def register_policy_groups(conf: cfg.ConfigOpts) -> list[str]:
    """Register policy_opts on every [policy:NAME] group found; returns
    the group names. Safe to call again after a reload."""
    names = policy_group_names(conf)
    for name in names:
        conf.register_group(cfg.OptGroup(name))
        conf.register_opts(policy_opts, group=name)
    return names


def register_opts(conf: cfg.ConfigOpts) -> None:
    # [scheduler] itself belongs to scheduler.conf.scheduler.
    conf.register_opts(scheduler_policy_opts, group="scheduler")
    conf.register_group(_balancer_group())
    conf.register_opts(balancer_opts, group="balancer")


def list_opts() -> dict:
    # A plain name: the generator then keeps the group's title and help
    # from scheduler.conf.scheduler.
    return {"scheduler": scheduler_policy_opts,
            _balancer_group(): balancer_opts}
