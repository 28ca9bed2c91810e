"""The plugin interface every compute monitor implements."""

import abc
import datetime
import re

from oslo_config import cfg

from compute_monitor import units

METRIC_NAME_RE = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)*$")
#: Names of instance entries (docs/operator-guide.md), which carry
#: ``"instance"``.
INSTANCE_PREFIX = units.INSTANCE_PREFIX


def utc_timestamp() -> str:
    """ISO-8601 UTC timestamp, the form every metric entry carries."""
    return datetime.datetime.now(datetime.UTC).isoformat(
        timespec="microseconds").replace("+00:00", "Z")


class ResourceMonitorPluginBase(abc.ABC):
    """Measures one aspect of the node and returns it as metric entries.

    Plugins are loaded by stevedore from the ``compute_monitor.monitors``
    entry points named in ``[compute_monitor] monitors`` and constructed
    with the agent's ``ConfigOpts``. ``get_metrics`` is called once per
    cycle from a worker thread; it may keep state between calls (for rates
    computed from deltas) and must not block longer than the interval.
    """

    #: Written into each entry's ``source``; defaults to the entry-point name.
    source: str = ""

    def __init__(self, conf: cfg.ConfigOpts):
        self.conf = conf

    @abc.abstractmethod
    def get_metric_names(self) -> set[str]:
        """The names this plugin may report (dotted lower case)."""

    @abc.abstractmethod
    def get_metrics(self) -> list[dict]:
        """One cycle's measurements.

        Each entry is ``{"name": str, "value": int | float,
        "timestamp": ISO-8601 UTC str, "source": str}``. A measurement of
        one instance on the node is named ``instance.*`` and carries
        ``"instance": "<instance uuid>"`` too.
        """

    def _entry(self, name: str, value: float, timestamp: str,
               instance: str | None = None) -> dict:
        entry = {"name": name, "value": value, "timestamp": timestamp,
                 "source": self.source}
        if instance is not None:
            entry["instance"] = instance
        return entry
