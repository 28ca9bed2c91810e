"""Which metrics the fleet reports: names, units, sources, host counts.

Read by ``scheduler-manage metrics list``, and to name a ``[metrics]
weight_setting`` metric that no host reports: by ``config check``, by
``scheduler-service`` at start-up and when a request fails for it.
"""

import dataclasses
from collections.abc import Iterable
from collections.abc import Sequence

from compute_monitor import units
from scheduler.common import suggest
from scheduler.conf import metric_stat
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


def unreported_weight_metrics(weight_setting: Iterable[tuple[str, float]],
                              hosts: Sequence[hm.HostState]
                              ) -> list[tuple[str, str]]:
    """``(name, why)`` for each metric of a ``[metrics] weight_setting``
    that no host of ``hosts`` reports, ``why`` ending with the closest
    name they do report: a misspelling removes every host under
    ``[metrics] required = true``."""
    # A windowed statistic reads its metric's reports.
    wanted = dict.fromkeys(metric_stat.base_metric(name)
                           for name, _ in weight_setting)
    reported = {metric.name for metric in reported_metrics(hosts)}
    return [(name, f"no host reports {name} ({len(hosts)} hosts, "
                   f"{len(reported)} metrics: 'scheduler-manage metrics "
                   "list')" + suggest.did_you_mean(name, reported))
            for name in wanted if name not in reported]
