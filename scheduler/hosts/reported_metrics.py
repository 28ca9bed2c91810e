"""Which metrics the fleet reports: names, units, sources, host counts.

Read by ``scheduler-manage metrics list`` and by ``config check``, which
names a ``weight_setting`` metric that no host reports.
"""

import dataclasses
from collections.abc import Iterable

from compute_monitor import units
from scheduler.hosts import state as hm


@dataclasses.dataclass(frozen=True)
class ReportedMetric:
    name: str
    #: Known for the built-in monitors' metrics only.
    unit: str | None
    #: Monitors that reported it (``cpu``, ``file``, a plugin's name).
    sources: tuple[str, ...]
    #: Hosts holding a value of it, fresh or not.
    hosts: int

    def as_dict(self) -> dict:
        return dataclasses.asdict(self) | {"sources": list(self.sources)}


def reported_metrics(hosts: Iterable[hm.HostState]) -> list[ReportedMetric]:
    """Every metric some host holds, by name."""
    sources: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for host in hosts:
        for name, metric in host.metrics.items():
            sources.setdefault(name, set()).add(metric.source or "?")
            counts[name] = counts.get(name, 0) + 1
    return [ReportedMetric(name, units.unit(name),
                           tuple(sorted(sources[name])), counts[name])
            for name in sorted(counts)]
