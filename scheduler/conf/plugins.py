"""Options of installed plugin packages.

A plugin package (one that registers monitors, filters, weighers or
balancers) declares its options the way oslo.config documents them: a
``list_opts`` function under the ``oslo.config.opts`` entry-point
namespace. The programs register those options before parsing, so that
``config check`` and the start-up warnings know them, and their values are
checked at start-up like ours, whether or not a plugin of the package is
enabled. Libraries' ``oslo.config.opts`` entry points are not read: only
a distribution that also provides one of our plugin namespaces is a plugin
package.
"""

import importlib.metadata
import re
from collections.abc import Iterator

from oslo_config import cfg

from scheduler import exception

#: Where plugin packages register their plugins.
PLUGIN_NAMESPACES = frozenset((
    "compute_monitor.monitors", "scheduler.filters", "scheduler.weighers",
    "scheduler.balancers"))
OPTS_NAMESPACE = "oslo.config.opts"
#: This project: its options are registered by its own modules.
_OURS = "metrics-scheduler"


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _plugin_opt_entry_points() -> Iterator[importlib.metadata.EntryPoint]:
    seen = set()
    for dist in importlib.metadata.distributions():
        name = _normalized(dist.metadata["Name"] or "")
        # The same distribution may be on sys.path twice (an editable
        # install next to a --target one); the first wins, as for imports.
        if name in seen or name == _OURS:
            continue
        seen.add(name)
        entry_points = dist.entry_points
        if not any(ep.group in PLUGIN_NAMESPACES for ep in entry_points):
            continue
        yield from (ep for ep in entry_points if ep.group == OPTS_NAMESPACE)


def register_plugin_opts(conf: cfg.ConfigOpts
                         ) -> list[exception.ConfigError]:
    """Register every installed plugin package's options on ``conf``
    (again is harmless); one ConfigError per package whose ``list_opts``
    cannot be loaded or returns something else than (group, options)
    pairs."""
    problems = []
    for entry_point in _plugin_opt_entry_points():
        try:
            groups = list(entry_point.load()())
            for group, opts in groups:
                name = getattr(group, "name", group)
                if name in (None, "DEFAULT"):
                    conf.register_opts(list(opts))
                    continue
                conf.register_group(group if isinstance(group, cfg.OptGroup)
                                    else cfg.OptGroup(name))
                conf.register_opts(list(opts), group=name)
        except Exception as e:  # a plugin's import may raise anything
            problems.append(exception.ConfigError(
                OPTS_NAMESPACE, entry_point.name, entry_point.value,
                f"the plugin package's options cannot be registered: {e}"))
    return problems
