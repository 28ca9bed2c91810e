"""Options of the [filter_scheduler] group: filters, weighers, selection."""

from oslo_config import cfg


def _group() -> cfg.OptGroup:
    return cfg.OptGroup(
        "filter_scheduler",
        title="Filter scheduler options",
        help="Which filters and weighers run, how weights are normalised and "
    "how the final host is picked.",
    )

DEFAULT_FILTERS = [
    "ComputeFilter",
    "AvailabilityZoneFilter",
    "ClusterFilter",
    "RamFilter",
    "CoreFilter",
    "DiskFilter",
    "ComputeCapabilitiesFilter",
    "ResourcesThresholdFilter",
    "NetworkFilter",
    "PinToHostFilter",
    "IgnoreHostsFilter",
    "SameHostFilter",
    "DifferentHostFilter",
    "ServerGroupAffinityFilter",
    "ServerGroupAntiAffinityFilter",
]

DEFAULT_WEIGHERS = [
    "RAMWeigher",
    "CPUWeigher",
    "DiskWeigher",
    "ServerGroupSoftAffinityWeigher",
    "ServerGroupSoftAntiAffinityWeigher",
    "ResourcesWeigher",
]

filter_scheduler_opts = [
    cfg.ListOpt(
        "enabled_filters",
        default=DEFAULT_FILTERS,
        help="Filters to run, by entry-point name (class name) in the "
        "scheduler.filters namespace. A host must pass every one. Add "
        "MetricsFilter to require every metric of [metrics] "
        "weight_setting to be present and fresh.",
    ),
    cfg.ListOpt(
        "weight_classes",
        default=DEFAULT_WEIGHERS,
        help="Weighers to run, by entry-point name (class name) in the "
        "scheduler.weighers namespace. Add MetricsWeigher to weigh by "
        "[metrics] weight_setting.",
    ),
    cfg.IntOpt(
        "host_subset_size",
        default=1,
        min=1,
        help="The chosen host is picked at random among this many best "
        "hosts. 1 always picks the best; larger values reduce collisions "
        "between concurrent schedulers at the cost of optimality.",
    ),
    cfg.IntOpt(
        "max_attempts",
        default=3,
        min=1,
        help="Hosts returned per instance: the chosen one plus "
        "max_attempts - 1 alternates.",
    ),
    cfg.StrOpt(
        "weight_normalization",
        default="minmax",
        choices=[
            ("minmax", "Scale each weigher to [0, 1] over the candidate "
             "hosts, from the smallest to the largest, then multiply by "
             "its multiplier."),
            ("rank", "Replace each weight by its rank among the "
             "candidates, then multiply (oVirt)."),
            ("hardmax", "Divide by the weigher's configured maximum "
             "(weight_maximums), then multiply; without one, by the "
             "largest absolute value, which scales from 0 as Nova's "
             "RAM, CPU and Disk weighers do."),
            ("none", "Raw weight times multiplier."),
        ],
        help="How each weigher's raw weights are made comparable before "
        "they are summed.",
    ),
    cfg.DictOpt(
        "weight_maximums",
        default={},
        help="Per-weigher maxima for weight_normalization = hardmax, as "
        "WeigherName:maximum pairs, e.g. RAMWeigher:1048576,"
        "CPUWeigher:256. A weigher without one is normalised by the "
        "largest absolute raw weight among the candidates.",
    ),
    cfg.FloatOpt("ram_weight_multiplier", default=1.0,
                 help="Multiplier of RAMWeigher; negative stacks hosts."),
    cfg.FloatOpt("cpu_weight_multiplier", default=1.0,
                 help="Multiplier of CPUWeigher; negative stacks hosts."),
    cfg.FloatOpt("disk_weight_multiplier", default=1.0,
                 help="Multiplier of DiskWeigher; negative stacks hosts."),
    cfg.FloatOpt("num_instances_weight_multiplier", default=0.0,
                 help="Multiplier of NumInstancesWeigher; positive "
                 "prefers hosts with more instances."),
    cfg.FloatOpt("soft_affinity_weight_multiplier", default=1.0, min=0.0,
                 help="Multiplier of ServerGroupSoftAffinityWeigher."),
    cfg.FloatOpt("soft_anti_affinity_weight_multiplier", default=1.0,
                 min=0.0,
                 help="Multiplier of ServerGroupSoftAntiAffinityWeigher."),
    cfg.FloatOpt("resources_weight_multiplier", default=1.0,
                 help="Multiplier of ResourcesWeigher, which serves "
                 "resources:<metric>=max|min extra specs."),
    cfg.IntOpt("max_instances_per_host", default=50, min=1,
               help="Ceiling used by NumInstancesFilter."),
    cfg.IntOpt(
        "service_down_time",
        default=60,
        min=1,
        help="Seconds without a heartbeat after which ComputeFilter "
        "considers a node down.",
    ),
    cfg.FloatOpt("cpu_allocation_ratio", default=16.0, min=0.0,
                 help="vCPUs per physical CPU, for nodes that do not set "
                 "their own ratio."),
    cfg.FloatOpt("ram_allocation_ratio", default=1.5, min=0.0,
                 help="Virtual RAM per physical RAM, for nodes that do "
                 "not set their own ratio."),
    cfg.FloatOpt("disk_allocation_ratio", default=1.0, min=0.0,
                 help="Virtual disk per physical disk, for nodes that do "
                 "not set their own ratio."),
    cfg.IntOpt(
        "refresh_overlap",
        default=10,
        min=0,
        help="Seconds re-read before the newest change already seen when "
        "the host cache refreshes incrementally. Covers transactions "
        "committed late and small clock differences between writers.",
    ),
    cfg.IntOpt(
        "full_refresh_interval",
        default=60,
        min=1,
        help="Seconds between full reloads of the host cache, which also "
        "notice deleted nodes.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(_group())
    conf.register_opts(filter_scheduler_opts, group="filter_scheduler")


def list_opts() -> dict:
    return {_group(): filter_scheduler_opts}
