"""Groups and options of the config files that no program reads.

oslo.config ignores them silently, so a misspelt name (``intervall``, a
``[metric]`` group) leaves the default in force without a word.
``config check`` lists them as problems; every other command of the
programs logs one WARNING each at start-up, or with ``--strict`` (``[DEFAULT]
strict = true``) exits 2 naming them all. Known means read by
any program of the project, an installed plugin package or oslo.log /
oslo.messaging: one file may serve the service and the agent.
"""

import collections
import dataclasses
from collections.abc import Iterator

from oslo_config import cfg
from oslo_log import log as logging

from compute_monitor import conf as monitor_conf
from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler.common import suggest
from scheduler.conf import cli
from scheduler.conf import messaging as messaging_conf
from scheduler.conf import plugins as plugin_conf
from scheduler.conf import policies as policy_conf

LOG = logging.getLogger(__name__)

#: Shown instead of the value of an option nobody reads.
HIDDEN = "***"


def register_all_opts(conf: cfg.ConfigOpts) -> list[exception.ConfigError]:
    """Register what any program of the project reads on the parsed
    ``conf``; returns the plugin packages whose options failed to load."""
    scheduler_conf.register_opts(conf)
    messaging_conf.register_messaging_opts(conf)
    monitor_conf.register_opts(conf)
    policy_conf.register_policy_groups(conf)
    return plugin_conf.register_plugin_opts(conf)


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


@dataclasses.dataclass(frozen=True)
class Unknown:
    """A key of a config file that no option reads."""

    section: str
    key: str
    path: str
    #: The whole section is unknown, not only the key.
    whole_group: bool
    #: The known name (of the group or option) it is closest to.
    closest: str | None

    @property
    def hint(self) -> str:
        return f"; did you mean {self.closest!r}?" if self.closest else ""

    def brief(self) -> str:
        """``[group] key of path; did you mean ...`` for a list."""
        what = (f"[{self.section}] (unknown group)" if self.whole_group
                else f"[{self.section}] {self.key}")
        hint = f" (did you mean {self.closest!r}?)" if self.closest else ""
        return f"{what} of {self.path}{hint}"

    def problem(self) -> exception.ConfigError:
        # The value is not shown: a misspelt password option is not
        # known to be secret.
        what = (f"unknown group [{self.section}]" if self.whole_group
                else f"unknown option of [{self.section}]")
        return exception.ConfigError(self.section, self.key, HIDDEN,
                                     f"{what} in {self.path}{self.hint}")


def unknown_options(conf: cfg.ConfigOpts) -> Iterator[Unknown]:
    """Sections and keys of the config files that no registered option
    reads, each with the closest known name."""
    known = _known_keys(conf)
    for path in conf.config_file or []:
        sections: dict = {}
        try:
            cfg.ConfigParser(path, sections).parse()
        except (OSError, cfg.ParseError):
            continue  # parsed once already: conf() reported it
        for section, keys in sections.items():
            for key in keys:
                if section not in known:
                    yield Unknown(section, key, path, True,
                                  suggest.closest(section, known))
                elif key not in known[section]:
                    yield Unknown(section, key, path, False,
                                  suggest.closest(key, known[section]))


def _one_per_group(unknowns: Iterator[Unknown]) -> Iterator[Unknown]:
    """The unknown options, and each unknown group once."""
    groups = set()
    for unknown in unknowns:
        if not unknown.whole_group:
            yield unknown
        elif (unknown.section, unknown.path) not in groups:
            groups.add((unknown.section, unknown.path))
            yield unknown


def _reported(conf: cfg.ConfigOpts) -> list[Unknown]:
    """The unknown groups and options, each group once. What the program
    registered already is tried first: when it reads every key, the
    other programs' and libraries' options (oslo.messaging, the
    agent's monitors: half a second of imports) need not be loaded."""
    if not any(unknown_options(conf)):
        return []
    register_all_opts(conf)
    return list(_one_per_group(unknown_options(conf)))


def report_unknown_options(prog: str, conf: cfg.ConfigOpts) -> None:
    """At start-up (after logging is set up): with ``strict``, exit 2
    with one line naming every unknown group and option; else one
    WARNING each."""
    unknowns = _reported(conf)
    if conf.strict:
        if unknowns:
            cli.config_error_exit(
                prog, "unknown options refused by --strict (strict = true):"
                f" {', '.join(u.brief() for u in unknowns)}")
        return
    _warn(unknowns)


def _warn(unknowns: list[Unknown]) -> None:
    for unknown in unknowns:
        if not unknown.whole_group:
            LOG.warning("Unknown option %s in [%s] of %s, ignored%s",
                        unknown.key, unknown.section, unknown.path,
                        unknown.hint)
        else:
            LOG.warning("Unknown group [%s] in %s, ignored%s",
                        unknown.section, unknown.path, unknown.hint)
