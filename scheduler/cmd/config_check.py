"""``scheduler-manage config check``: every configuration problem at once.

Start-up stops at the first problem; this runs each check on its own and
collects the ConfigError of each, so one run lists everything to fix.
Nothing is started and neither the database nor the broker is contacted:
URLs are checked for their form and installed drivers only.

Each cluster policy and each custom migration policy is checked on its
own; within one of them the first problem counts, the next shows on the
next run.
"""

import collections
import importlib.metadata
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence

from oslo_config import cfg

from compute_monitor import agent
from compute_monitor import conf as monitor_conf
from scheduler import cluster_policy
from scheduler import exception
from scheduler import filters
from scheduler import suggest
from scheduler import weights
from scheduler.cmd import common
from scheduler.cmd import service
from scheduler.conf import messaging as messaging_conf
from scheduler.conf import policies as policy_conf
from scheduler.db import api as db_api
from scheduler.migration import policies as migration_policies
from scheduler.weights import normalization

#: Shown instead of the value of an option nobody reads.
HIDDEN = "***"

Check = Callable[[cfg.ConfigOpts], Iterable[exception.ConfigError]]


def _raising(validator: Callable[[cfg.ConfigOpts], object]) -> Check:
    """A start-up validator (raises its first ConfigError) as a check."""
    def check(conf: cfg.ConfigOpts) -> Iterator[exception.ConfigError]:
        try:
            validator(conf)
        except exception.ConfigError as e:
            yield e
    return check


def _known_keys(conf: cfg.ConfigOpts) -> dict[str, set[str]]:
    """Registered option names (deprecated ones included) by section."""
    known: dict[str, set[str]] = collections.defaultdict(set)
    # oslo.config has no public walk over every option of every group.
    for info, group in conf._all_opt_infos():
        opt = info["opt"]
        section = "DEFAULT" if group is None else group.name
        known[section] |= {opt.dest, opt.name}
        for old in opt.deprecated_opts:
            known[old.group or section].add(old.name or opt.dest)
    return known


def unknown_options(conf: cfg.ConfigOpts) -> Iterator[exception.ConfigError]:
    """Sections and keys of the config files that no option reads:
    usually a misspelt name, silently ignored by oslo.config."""
    known = _known_keys(conf)
    for path in conf.config_file or []:
        sections: dict = {}
        try:
            cfg.ConfigParser(path, sections).parse()
        except (OSError, cfg.ParseError):
            continue  # parsed once already: conf() reported it
        for section, keys in sections.items():
            for key in keys:
                # The value is not shown: a misspelt password option is
                # not known to be secret.
                if section not in known:
                    yield exception.ConfigError(
                        section, key, HIDDEN,
                        f"unknown group [{section}] in {path}"
                        + suggest.did_you_mean(section, known))
                elif key not in known[section]:
                    yield exception.ConfigError(
                        section, key, HIDDEN,
                        f"unknown option of [{section}] in {path}"
                        + suggest.did_you_mean(key, known[section]))


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
    """Every ``[filter_scheduler] weight_maximums`` entry on its own."""
    for name in conf.filter_scheduler.weight_maximums:
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
)


def _line(error: exception.ConfigError) -> str:
    """``[group] option: value 'v': what was expected``."""
    problem = str(error).removeprefix(
        f"invalid value {error.value!r} for [{error.group}] "
        f"{error.option}: ")
    return f"[{error.group}] {error.option}: value {error.value!r}: {problem}"


def problems(conf: cfg.ConfigOpts) -> list[str]:
    """One line per problem of the parsed configuration ``conf``, in the
    order found, each reported once."""
    # Everything any program of the project reads, so that a file shared
    # with the agent or setting oslo.messaging options is not "unknown".
    messaging_conf.register_messaging_opts(conf)
    monitor_conf.register_opts(conf)
    policy_conf.register_policy_groups(conf)
    bad_options = list(common.option_problems(conf))
    lines = [_line(e) for e in bad_options]
    for check in CHECKS:
        try:
            lines += [_line(e) for e in check(conf)]
        except (cfg.Error, ValueError) as e:
            # A check reading an option that cannot be converted: that
            # option is reported above, once.
            if not bad_options:
                lines.append(str(e).replace("\n", " "))
    # A validator may repeat what a finer check said (policies file).
    return list(dict.fromkeys(lines))
