"""``scheduler-manage config check``: every configuration problem at once.

Start-up stops at the first problem; this runs each check on its own and
collects the ConfigError of each, so one run lists everything to fix.
Nothing is started and the broker is not contacted: URLs are checked for
their form and installed drivers only. The database is read only for the
metric names the fleet reports, when ``weight_setting`` names some.

Each cluster policy and each custom migration policy is checked on its
own; within one of them the first problem counts, the next shows on the
next run.
"""

import importlib.metadata
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence

from oslo_config import cfg

from compute_monitor import agent
from scheduler import exception
from scheduler import filters
from scheduler import weights
from scheduler.cmd import api_checks
from scheduler.cmd import common
from scheduler.cmd import service
from scheduler.cmd import unknown_options as unknown
from scheduler.cmd import weight_setting_check
from scheduler.common import suggest
from scheduler.conf import api as api_conf
from scheduler.db import api as db_api
from scheduler.policies import cluster as cluster_policy
from scheduler.policies.migration import policies as migration_policies
from scheduler.weights import normalization

Check = Callable[[cfg.ConfigOpts], Iterable[exception.ConfigError]]


def _raising(validator: Callable[[cfg.ConfigOpts], object]) -> Check:
    """A start-up validator (raises its first ConfigError) as a check."""
    def check(conf: cfg.ConfigOpts) -> Iterator[exception.ConfigError]:
        try:
            validator(conf)
        except exception.ConfigError as e:
            yield e
    return check


def unknown_options(conf: cfg.ConfigOpts) -> Iterator[exception.ConfigError]:
    """Sections and keys of the config files that no option reads:
    usually a misspelt name, silently ignored by oslo.config."""
    for key in unknown.unknown_options(conf):
        yield key.problem()


def _plugin_problems(group: str, option: str, names: Sequence[str],
                     namespace: str) -> Iterator[exception.ConfigError]:
    available = {ep.name: ep for ep in
                 importlib.metadata.entry_points(group=namespace)}
    for name in names:
        entry_point = available.get(name)
        if entry_point is None:
            yield exception.ConfigError(
                group, option, name,
                f"expected an entry-point name of {namespace}: "
                f"{', '.join(sorted(available))}"
                + suggest.did_you_mean(name, available))
            continue
        try:
            entry_point.load()
        except Exception as e:  # a plugin's import may raise anything
            yield exception.ConfigError(group, option, name,
                                        f"the plugin failed to load: {e}")


def plugins(conf: cfg.ConfigOpts) -> Iterator[exception.ConfigError]:
    """``[filter_scheduler] enabled_filters`` and ``weight_classes``:
    each name an installed entry point that imports."""
    opts = conf.filter_scheduler
    yield from _plugin_problems("filter_scheduler", "enabled_filters",
                                opts.enabled_filters, filters.NAMESPACE)
    yield from _plugin_problems("filter_scheduler", "weight_classes",
                                opts.weight_classes, weights.NAMESPACE)


def monitors(conf: cfg.ConfigOpts) -> Iterator[exception.ConfigError]:
    """``[compute_monitor] monitors`` as the agent loads them: each name an
    installed entry point that imports, then each monitor constructed
    (a plugin checks its own options there)."""
    names = conf.compute_monitor.monitors
    problems = list(_plugin_problems("compute_monitor", "monitors", names,
                                     agent.MONITOR_NAMESPACE))
    yield from problems
    if not problems:
        yield from _raising(agent.load_monitors)(conf)


def weight_maximums(conf: cfg.ConfigOpts) -> Iterator[exception.ConfigError]:
    """Every ``[filter_scheduler] weight_maximums`` entry on its own; a
    name that is no weigher's is ignored by the scheduler, so reported."""
    weighers = importlib.metadata.entry_points(group=weights.NAMESPACE).names
    for name in conf.filter_scheduler.weight_maximums:
        if name not in weighers:
            yield exception.ConfigError(
                "filter_scheduler", "weight_maximums", name,
                f"not a weigher: expected entry-point names of "
                f"{weights.NAMESPACE}" + suggest.did_you_mean(name, weighers))
            continue
        try:
            normalization.weight_maximum(conf, name)
        except exception.ConfigError as e:
            yield e


def migration_policies_file(conf: cfg.ConfigOpts
                            ) -> Iterator[exception.ConfigError]:
    """Each rejected policy of ``[migration] policies_file``, then the
    mapping of clusters to policies."""
    yield from migration_policies.migration_problems(conf)


CHECKS: tuple[Check, ...] = (
    unknown_options,
    _raising(lambda conf: db_api.validate_connection_url(
        conf.database.connection)),
    # The service's own check: it also refuses several workers on an
    # in-process transport.
    _raising(service.validate_transport),
    plugins,
    monitors,
    weight_maximums,
    cluster_policy.policy_problems,
    migration_policies_file,
    weight_setting_check.weigher_problems,
    weight_setting_check.window_problems,
    _raising(api_conf.validate),
    _raising(api_checks.validate_keystone_auth),
    _raising(api_checks.validate_policy_file),
)


def _line(error: exception.ConfigError) -> str:
    """``[group] option: value 'v': what was expected``."""
    problem = str(error).removeprefix(
        f"invalid value {error.value!r} for [{error.group}] "
        f"{error.option}: ")
    return f"[{error.group}] {error.option}: value {error.value!r}: {problem}"


def problems(conf: cfg.ConfigOpts,
             notes: list[str] | None = None) -> list[str]:
    """One line per problem of the parsed configuration ``conf``, in the
    order found, each reported once; a check that could not run appends
    why to ``notes``."""
    # Everything any program of the project reads, so that a file shared
    # with the agent or setting oslo.messaging options is not "unknown".
    api_conf.register_library_opts(conf, auth_plugin=True)
    lines = [_line(e) for e in unknown.register_all_opts(conf)]
    bad_options = list(common.option_problems(conf))
    lines += [_line(e) for e in bad_options]
    for check in CHECKS:
        try:
            lines += [_line(e) for e in check(conf)]
        except (cfg.Error, ValueError) as e:
            # A check reading an option that cannot be converted: that
            # option is reported above, once.
            if not bad_options:
                lines.append(str(e).replace("\n", " "))
    if not bad_options:
        lines += [_line(exception.ConfigError("metrics", "weight_setting",
                                              name, why))
                  for name, why in weight_setting_check.reported_problems(
                      conf, [] if notes is None else notes)]
    # A validator may repeat what a finer check said (policies file).
    return list(dict.fromkeys(lines))
