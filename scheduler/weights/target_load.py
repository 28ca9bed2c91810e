"""TargetLoadWeigher: fill hosts up to a target CPU load, then spread."""

import numpy as np

from scheduler.hosts import expected_load
from scheduler.hosts.state import metrics_window
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import fresh_metric
from scheduler.request.spec import RequestSpec
from scheduler.weights import BaseHostWeigher
from scheduler.weights.load_risk import windowed


def target_score(load: np.ndarray, target: float) -> np.ndarray:
    """100 at the target, falling linearly to ``target`` at an idle host
    and to 0 at a full one: below the target the busiest host wins
    (packing), above it the least busy."""
    load = np.clip(load, 0.0, 100.0)
    if target <= 0.0:
        return 100.0 - load
    if target >= 100.0:
        return load
    below = target + (100.0 - target) * load / target
    above = target * (100.0 - load) / (100.0 - target)
    return np.where(load <= target, below, above)


class TargetLoadWeigher(BaseHostWeigher):
    """Weighs how close a host's predicted cpu.percent (its mean over
    ``[metrics] target_window`` plus the new instance's expected load,
    ``[metrics] expected_instance_cpu``) comes to ``[metrics]
    target_cpu_percent`` without passing it; past the target, the less
    loaded the better (after Trimaran's TargetLoadPacking). Scaled by
    ``[metrics] target_load_weight_multiplier``. A host without a fresh
    cpu.percent has no raw weight.
    """

    def multiplier(self, spec: RequestSpec) -> float:
        return self.conf.metrics.target_load_weight_multiplier

    def raw_column(self, table: HostTable, rows: np.ndarray,
                   spec: RequestSpec) -> np.ndarray:
        opts = self.conf.metrics
        cutoff = metrics_window(spec, self.conf).cutoff
        mean = fresh_metric(table, windowed("mean", opts.target_window),
                            cutoff)[rows]
        added = expected_load.added_cpu_percent(self.conf, spec, table,
                                                rows)
        # NaN (no fresh report) carries through: no raw weight.
        return np.where(np.isnan(mean), np.nan,
                        target_score(mean + added, opts.target_cpu_percent))
