"""Cluster policies (oVirt's scheduling policies) from the config file.

A cluster policy is the filters, weigher factors, normalisation and the
balancer one cluster is scheduled and balanced with. Policies are the five
built-ins below, or ``[policy:NAME]`` groups (see scheduler.conf.policies);
a group named after a built-in overrides it option by option.
``[scheduler] cluster_policies`` maps clusters to policies and
``[scheduler] default_policy`` covers the others; without a policy a
cluster uses ``[filter_scheduler]`` and is never balanced.

The service runs one FilterScheduler per policy, all sharing one
HostManager: ``PolicySet.schedulers(conf, host_manager)``, held by the
manager's ``scheduler.policies.schedulers.PolicySchedulers``.
"""

import dataclasses
import functools
import importlib.metadata
from collections.abc import Mapping
from collections.abc import Sequence

from oslo_config import cfg

from scheduler import exception
from scheduler import filters
from scheduler import weights
from scheduler.balancer import base as balancer_base
from scheduler.common import suggest
from scheduler.conf import policies as policy_conf
from scheduler.engine import filter_scheduler
from scheduler.hosts.cache.manager import HostManager

NO_BALANCER = "none"
NORMALIZATIONS = ("minmax", "rank", "hardmax", "none")
FIRST = "first"
LAST = "last"

# The built-ins, written as an operator would write them in a
# [policy:NAME] group; options left out come from [filter_scheduler].
# power_saving negates the resource weighers so that hosts are packed.
BUILTIN_POLICIES: dict[str, dict[str, object]] = {
    "none": {},
    "evenly_distributed": {
        "balancer": "even_distribution",
        "balancer_parameters": ["HighUtilization:80",
                                "CpuOverCommitDurationMinutes:2"],
    },
    "power_saving": {
        "weighers": ["RAMWeigher:-1", "CPUWeigher:-1", "DiskWeigher:-1",
                     "ServerGroupSoftAffinityWeigher:1",
                     "ServerGroupSoftAntiAffinityWeigher:1",
                     "ResourcesWeigher:1"],
        "balancer": "power_saving",
        "balancer_parameters": ["HighUtilization:80", "LowUtilization:20",
                                "CpuOverCommitDurationMinutes:2"],
    },
    # Not oVirt's: evenly_distributed's placement, with a balancer that
    # judges hosts by their mean load over ten minutes and keeps destinations
    # well under HighUtilization, so that migrations stay rare.
    "steady_load": {
        "balancer": "steady_load",
        "balancer_parameters": ["HighUtilization:80",
                                "LoadWindowMinutes:10", "SafetyMargin:10",
                                "MoveCooldownMinutes:60"],
    },
    "vm_evenly_distributed": {
        "balancer": "even_vm_count",
        # oVirt's SpmVmGrace is left out, as by the balancer.
        "balancer_parameters": ["HighVmCount:10", "MigrationThreshold:5"],
    },
}


@dataclasses.dataclass(frozen=True)
class ClusterPolicy:
    """One validated policy: filters in run order (first/last resolved),
    (weigher, integer factor) pairs, normalisation, balancer and its typed
    parameters (defaults filled in by the balancer)."""

    name: str
    filters: tuple[str, ...]
    weighers: tuple[tuple[str, int], ...]
    normalization: str
    balancer: str | None = None
    balancer_parameters: Mapping[str, int] = dataclasses.field(
        default_factory=dict)
    #: Bumped by every API edit of a stored policy; None from the config.
    version: int | None = None

    @property
    def label(self) -> str:
        """The name, with the version of a stored policy: what decision
        logs and explain name, so that an edit shows."""
        return self.name if self.version is None else \
            f"{self.name} v{self.version}"

    @property
    def group(self) -> str:
        return policy_conf.POLICY_GROUP_PREFIX + self.name

    def pipeline(self) -> filter_scheduler.Pipeline:
        """What a FilterScheduler runs for clusters of this policy."""
        return filter_scheduler.Pipeline(
            self.filters,
            tuple((name, float(factor)) for name, factor in self.weighers),
            self.normalization, group=self.group, filters_option="filters",
            weighers_option="weighers")


@dataclasses.dataclass(frozen=True)
class PolicySet:
    """The policies in use and which cluster uses which."""

    policies: Mapping[str, ClusterPolicy]
    cluster_policies: Mapping[str, str]
    default_policy: str | None
    #: Migration policy ids set through the REST API, by cluster; they
    #: win over [migration] cluster_policies.
    migration_policies: Mapping[str, str] = dataclasses.field(
        default_factory=dict)
    #: Bandwidth settings set through the REST API, by cluster: auto,
    #: hypervisor_default or Mbps, as [migration] bandwidth.
    bandwidths: Mapping[str, str | int] = dataclasses.field(
        default_factory=dict)

    def name_for(self, cluster: str | None) -> str | None:
        """Policy name of ``cluster``; None means [filter_scheduler]."""
        if cluster is None:
            return self.default_policy
        return self.cluster_policies.get(cluster, self.default_policy)

    def for_cluster(self, cluster: str | None) -> ClusterPolicy | None:
        name = self.name_for(cluster)
        return None if name is None else self.policies[name]

    def schedulers(self, conf: cfg.ConfigOpts,
                   host_manager: HostManager,
                   default: filter_scheduler.FilterScheduler | None = None,
                   previous: tuple["PolicySet", Mapping[
                       str | None, filter_scheduler.FilterScheduler]]
                   | None = None
                   ) -> dict[str | None, filter_scheduler.FilterScheduler]:
        """One FilterScheduler per policy, keyed like ``name_for``; they
        share ``host_manager`` and so its host cache. ``default`` serves
        None (else one of ``[filter_scheduler]`` is built); ``previous``
        (an older set and its schedulers) lends the schedulers of the
        policies that did not change."""
        old_policies, old = previous or (None, {})
        schedulers = {None: default or filter_scheduler.FilterScheduler(
            conf, host_manager=host_manager)}
        for name, policy in self.policies.items():
            if (old_policies is not None and name in old
                    and old_policies.policies.get(name) == policy):
                schedulers[name] = old[name]
            else:
                schedulers[name] = filter_scheduler.FilterScheduler(
                    conf, host_manager=host_manager,
                    pipeline=policy.pipeline())
        return schedulers


def load_policies(conf: cfg.ConfigOpts) -> PolicySet:
    """Read and validate the cluster policies; raises the ConfigError of
    the first problem (start-up).

    Operator groups are all validated; built-ins only when a cluster or
    the default uses them, since only those are ever run.
    """
    policies, problems = _read(conf)
    if problems:
        raise problems[0]
    return policies


def policy_problems(conf: cfg.ConfigOpts) -> list[exception.ConfigError]:
    """Every problem of the cluster policies (``config check``): each
    mapping and each policy checked on its own; within one policy, its
    first problem."""
    return _read(conf)[1]


def _read(conf: cfg.ConfigOpts
          ) -> tuple[PolicySet, list[exception.ConfigError]]:
    groups = policy_conf.register_policy_groups(conf)
    written = {group[len(policy_conf.POLICY_GROUP_PREFIX):]: group
               for group in groups}
    problems = []
    if "" in written:
        problems.append(exception.ConfigError(
            policy_conf.POLICY_GROUP_PREFIX, "", "",
            "a policy group needs a name: [policy:NAME]"))
        del written[""]
    known = sorted(set(BUILTIN_POLICIES) | set(written))
    mapping = dict(conf.scheduler.cluster_policies)
    default = conf.scheduler.default_policy
    problems.extend(
        exception.ConfigError(
            "scheduler", "cluster_policies", f"{cluster}:{name}",
            f"unknown policy, expected one of {', '.join(known)}"
            + suggest.did_you_mean(name, known))
        for cluster, name in mapping.items() if name not in known)
    if default is not None and default not in known:
        problems.append(exception.ConfigError(
            "scheduler", "default_policy", default,
            f"unknown policy, expected one of {', '.join(known)}"
            + suggest.did_you_mean(default, known)))
    used = set(written) | set(mapping.values()) | {default} - {None}
    policies = {}
    for name in sorted(used & set(known)):
        try:
            policies[name] = _build(conf, name, _options(
                conf, name, written.get(name)))
        except exception.ConfigError as e:
            problems.append(e)
    return PolicySet(policies, mapping, default), problems


def config_policy_names(conf: cfg.ConfigOpts) -> list[str]:
    """The built-ins and the [policy:NAME] groups of the config files."""
    groups = policy_conf.register_policy_groups(conf)
    written = {group[len(policy_conf.POLICY_GROUP_PREFIX):]
               for group in groups} - {""}
    return sorted(set(BUILTIN_POLICIES) | written)


def config_options(conf: cfg.ConfigOpts, name: str) -> dict[str, object]:
    """The options of config policy ``name`` as a [policy:NAME] group
    writes them (built-in defaults merged); what ``build_policy`` takes."""
    group = policy_conf.POLICY_GROUP_PREFIX + name
    registered = set(policy_conf.register_policy_groups(conf))
    return _options(conf, name, group if group in registered else None)


def build_policy(conf: cfg.ConfigOpts, name: str,
                 options: Mapping[str, object],
                 version: int | None = None) -> ClusterPolicy:
    """Validate one policy written as [policy:NAME] options; raises the
    ConfigError of its first problem. The one validation path of config
    files, start-up, ``config check`` and the REST API."""
    policy = _build(conf, name, options)
    return dataclasses.replace(policy, version=version)


def _options(conf: cfg.ConfigOpts, name: str,
             group: str | None) -> dict[str, object]:
    """The built-in's options overridden by those its group sets."""
    options = dict(BUILTIN_POLICIES.get(name, {}))
    if group is None:
        return options
    section = conf[group]
    if section.balancer not in (None, options.get("balancer")):
        # The built-in's parameters mean nothing to another balancer.
        options.pop("balancer_parameters", None)
    inherited = list(options.get("balancer_parameters", []))
    for opt in policy_conf.policy_opts:
        value = section[opt.name]
        if value is not None:
            options[opt.name] = value
    # Parameters override the built-in's one by one.
    if section.balancer_parameters is not None:
        options["balancer_parameters"] = (
            inherited + list(section.balancer_parameters))
    return options


def _build(conf: cfg.ConfigOpts, name: str,
           options: Mapping[str, object]) -> ClusterPolicy:
    group = policy_conf.POLICY_GROUP_PREFIX + name
    defaults = conf.filter_scheduler
    filter_names = _order_filters(group, options.get(
        "filters", defaults.enabled_filters))
    _check_plugins(group, "filters", filter_names, filters.NAMESPACE)
    weighers = _weighers(group, options.get(
        "weighers", [f"{w}:1" for w in defaults.weight_classes]))
    _check_plugins(group, "weighers", [w for w, _ in weighers],
                   weights.NAMESPACE)
    normalization = options.get("normalization",
                                defaults.weight_normalization)
    if normalization not in NORMALIZATIONS:
        raise exception.ConfigError(
            group, "normalization", normalization,
            f"expected one of {', '.join(NORMALIZATIONS)}"
            + suggest.did_you_mean(str(normalization), NORMALIZATIONS))
    balancer = options.get("balancer", NO_BALANCER)
    raw_parameters = _parameters(group, options.get("balancer_parameters",
                                                    []))
    if balancer == NO_BALANCER:
        if raw_parameters:
            raise exception.ConfigError(
                group, "balancer_parameters",
                ",".join(f"{k}:{v}" for k, v in raw_parameters.items()),
                "parameters need a balancer; balancer is none")
        return ClusterPolicy(name, filter_names, weighers, normalization)
    parameters = _balancer_class(group, balancer).validate_parameters(
        name, raw_parameters)
    return ClusterPolicy(name, filter_names, weighers, normalization,
                         balancer, parameters)


def _order_filters(group: str, items: Sequence[str]) -> tuple[str, ...]:
    """Filters marked :first, then the unmarked, then those marked :last,
    each in the order written."""
    placed: dict[str, list[str]] = {FIRST: [], "": [], LAST: []}
    seen = set()
    for item in items:
        name, _, mark = (s.strip() for s in item.partition(":"))
        if mark not in placed:
            raise exception.ConfigError(
                group, "filters", item,
                "expected a filter name, optionally suffixed :first or :last")
        if name in seen:
            raise exception.ConfigError(group, "filters", name,
                                        "the filter is listed twice")
        seen.add(name)
        placed[mark].append(name)
    return tuple(placed[FIRST] + placed[""] + placed[LAST])


def _weighers(group: str,
              items: Sequence[str]) -> tuple[tuple[str, int], ...]:
    pairs: dict[str, int] = {}
    for item in items:
        name, sep, factor = (s.strip() for s in item.partition(":"))
        try:
            number = int(factor) if sep else 1
        except ValueError:
            raise exception.ConfigError(
                group, "weighers", item,
                "expected Name:factor with an integer factor, e.g. "
                "CPUWeigher:2 or RAMWeigher:-1") from None
        if name in pairs:
            raise exception.ConfigError(group, "weighers", name,
                                        "the weigher is listed twice")
        pairs[name] = number
    return tuple(pairs.items())


def _parameters(group: str, items: Sequence[str]) -> dict[str, str]:
    """``Name:value`` items; a later item overrides an earlier one, which
    is how a group overrides a built-in's parameters."""
    parameters: dict[str, str] = {}
    for item in items:
        name, sep, value = (s.strip() for s in item.partition(":"))
        if not sep or not name or not value:
            raise exception.ConfigError(
                group, "balancer_parameters", item,
                "expected Name:value, e.g. HighUtilization:80")
        parameters[name] = value
    return parameters


@functools.cache
def _entry_points(namespace: str) -> importlib.metadata.EntryPoints:
    # Scanning every installed distribution costs milliseconds; the API
    # validates policies per request. What is installed does not change
    # under a running process (stevedore caches it the same way).
    return importlib.metadata.entry_points(group=namespace)


def _check_plugins(group: str, option: str, names: Sequence[str],
                   namespace: str) -> None:
    available = set(_entry_points(namespace).names)
    unknown = [name for name in names if name not in available]
    if unknown:
        raise exception.ConfigError(
            group, option, ",".join(unknown),
            f"expected entry-point names of {namespace}: "
            f"{', '.join(sorted(available))}"
            + suggest.did_you_mean(unknown[0], available))


# Loaded once per name: stevedore's lookup costs a millisecond, paid per
# policy validated (the API validates per request). Failures are not
# cached (functools.cache keeps return values only).
_loaded_balancer = functools.cache(balancer_base.balancer_class)


def _balancer_class(group: str, name: str) -> type:
    # Checked here first: stevedore would also log the unknown name on
    # stderr, and the error must stay one line.
    available = sorted(_entry_points(balancer_base.NAMESPACE).names)
    if name not in available:
        raise exception.ConfigError(
            group, "balancer", name,
            f"expected an entry-point name of {balancer_base.NAMESPACE} or "
            f"none: {', '.join(available + [NO_BALANCER])}"
            + suggest.did_you_mean(name, available))
    try:
        return _loaded_balancer(name)
    except KeyError:
        raise exception.ConfigError(
            group, "balancer", name, "the plugin failed to load") from None
