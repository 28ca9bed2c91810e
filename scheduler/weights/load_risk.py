"""LoadRiskWeigher: prefer hosts whose CPU load is low and steady."""

import numpy as np

from scheduler.hosts import expected_load
from scheduler.hosts.state import metrics_window
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import fresh_metric
from scheduler.request.spec import RequestSpec
from scheduler.weights import BaseHostWeigher


def windowed(stat: str, window: float) -> str:
    """The cpu.percent statistic over ``window`` seconds, named as
    weight_setting would name it (one cached column per name)."""
    return f"cpu.percent:{stat}:{window:g}s"


class LoadRiskWeigher(BaseHostWeigher):
    """Weighs ``-(mean + risk_factor x stddev)`` of cpu.percent over
    ``[metrics] risk_window``, the new instance's expected load
    (``[metrics] expected_instance_cpu``) added to the mean: a host that
    is quiet on average but often spikes ranks below a steadily quiet
    one (after Trimaran's LoadVariationRiskBalancing). Options
    ``[metrics] risk_factor``, ``risk_window``; scaled by ``[metrics]
    load_risk_weight_multiplier``. A host without a fresh cpu.percent
    (``[metrics] max_age``) has no raw weight.
    """

    def multiplier(self, spec: RequestSpec) -> float:
        return self.conf.metrics.load_risk_weight_multiplier

    def raw_column(self, table: HostTable, rows: np.ndarray,
                   spec: RequestSpec) -> np.ndarray:
        opts = self.conf.metrics
        cutoff = metrics_window(spec, self.conf).cutoff
        mean = fresh_metric(table, windowed("mean", opts.risk_window),
                            cutoff)[rows]
        spread = fresh_metric(table, windowed("stddev", opts.risk_window),
                              cutoff)[rows]
        added = expected_load.added_cpu_percent(self.conf, spec, table,
                                                rows)
        # Past 100 percent a host is saturated however it got there.
        load = np.minimum(mean + added, 100.0)
        return -(load + opts.risk_factor * spread)
