"""MetricsWeigher: weigh hosts by the metrics their monitors report."""

import numpy as np

from scheduler.filters import Rejection
from scheduler.filters.metrics_filter import unavailable_detail
from scheduler.hosts.state import HostState
from scheduler.hosts.state import metrics_window
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import fresh_metric
from scheduler.request.spec import RequestSpec
from scheduler.weights import BaseHostWeigher
from scheduler.weights import metric_scale


class MetricsWeigher(BaseHostWeigher):
    """Weighs ``sum(ratio x metric value)`` over ``[metrics]
    weight_setting`` (``name=ratio, ...``), with values adjusted for
    pending claims and older than ``[metrics] max_age`` counted as
    unavailable; with ``[metrics] weight_setting_scale`` minmax or rank,
    each metric is first normalised across the hosts
    (``metric_scale``). Scaled by ``[metrics] weight_multiplier``.

    A host missing a metric has no raw weight (None). With ``[metrics]
    required = true`` the scheduler removes it (Nova raised an
    unexpected exception there instead); with ``false`` it keeps the
    host and gives it ``[metrics] weight_of_unavailable``.
    """

    def applies(self, spec: RequestSpec) -> bool:
        return bool(self.conf.metrics.weight_setting)

    def multiplier(self, spec: RequestSpec) -> float:
        return self.conf.metrics.weight_multiplier

    def unavailable_removes_host(self, spec: RequestSpec) -> bool:
        return self.conf.metrics.required

    def why_unavailable(self, host: HostState,
                        spec: RequestSpec) -> Rejection | None:
        # The metric's name goes into the reason, so that a misspelt
        # weight_setting reads as such in the NoValidHost summary.
        window = metrics_window(spec, self.conf)
        for name, _ratio in self.conf.metrics.weight_setting:
            if host.metric_since(name, window.cutoff) is None:
                return Rejection(
                    f"required metric unavailable: {name}",
                    unavailable_detail(host, name, window.now,
                                       window.max_age))
        return None

    def raw_column(self, table: HostTable, rows: np.ndarray,
                   spec: RequestSpec) -> np.ndarray:
        cutoff = metrics_window(spec, self.conf).cutoff
        scale = self.conf.metrics.weight_setting_scale
        if scale != metric_scale.RAW:
            setting = self.conf.metrics.weight_setting
            return metric_scale.scaled_sum(
                scale, [fresh_metric(table, name, cutoff)[rows]
                        for name, _ratio in setting],
                [ratio for _name, ratio in setting], len(rows))
        total = np.zeros(len(rows))
        # NaN (missing or stale) carries through the sum, as None does.
        for name, ratio in self.conf.metrics.weight_setting:
            term = fresh_metric(table, name, cutoff)[rows]
            term *= ratio
            total += term
        return total
