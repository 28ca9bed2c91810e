"""MetricsFilter: every weighed metric must be reported and fresh."""

import datetime

import numpy as np

from scheduler.conf import metric_stat
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.filters import all_of
from scheduler.hosts import change_kinds
from scheduler.hosts.state import HostState
from scheduler.hosts.state import MetricsWindow
from scheduler.hosts.state import metrics_window
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import fresh_metric
from scheduler.request.spec import RequestSpec


def unavailable_detail(host: HostState, name: str, now: datetime.datetime,
                       max_age: float) -> str:
    """Why ``host.metric(name, ...)`` is None, for explain output."""
    # A windowed statistic (cpu.percent:p95:1h) is its metric's.
    reported = metric_stat.base_metric(name)
    if reported in host.bad_metrics:
        return f"{reported} reported but not a number"
    metric = host.metrics.get(reported)
    if metric is None:
        return f"{reported} not reported"
    age = (now - metric.timestamp).total_seconds()
    return f"{reported} is {age:.0f} s old, max_age {max_age:g} s"


class MetricsFilter(BaseHostFilter):
    """Rejects hosts missing a metric of ``[metrics] weight_setting``.

    A metric counts as missing when it was never reported, was reported
    with a value that is not a number, or is older than ``[metrics]
    max_age`` seconds. Enable it to keep MetricsWeigher from ranking
    hosts it knows nothing about.
    """

    def applies(self, spec: RequestSpec) -> bool:
        return bool(self.conf.metrics.weight_setting)

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        window, names = spec.memo("MetricsFilter",
                                  lambda: self._prepare(spec))
        return all_of((~self._broken(table, name)
                       & ~np.isnan(fresh_metric(table, name, window.cutoff))
                       for name in names), len(table))

    @staticmethod
    def _broken(table: HostTable, name: str) -> np.ndarray:
        """Where the host's latest word on ``name`` is malformed."""
        return table.column(("bad_metric", name), bool,
                            lambda host: name in host.bad_metrics,
                            change_kinds.REPORTS)

    def why_rejected(self, host: HostState,
                     spec: RequestSpec) -> Rejection | None:
        window, names = spec.memo("MetricsFilter",
                                  lambda: self._prepare(spec))
        for name in names:
            # A malformed report may sit next to an older good value;
            # the node's latest word on the metric is that it is broken.
            if (name in host.bad_metrics
                    or host.metric_since(name, window.cutoff) is None):
                return Rejection(f"metric {name} unavailable",
                                 unavailable_detail(host, name, window.now,
                                                    window.max_age))
        return None

    def _prepare(self, spec: RequestSpec) -> tuple[MetricsWindow, list[str]]:
        """The request's metrics window and the metrics of ``[metrics]
        weight_setting``, once per request."""
        return (metrics_window(spec, self.conf),
                [name for name, _ratio in self.conf.metrics.weight_setting])
