"""ResourcesWeigher: serves ``resources:<metric>=max|min`` extra specs."""

import numpy as np

from scheduler.hosts.state import metrics_window
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import fresh_metric
from scheduler.request.spec import RequestSpec
from scheduler.weights import BaseHostWeigher
from scheduler.weights import metric_scale
from scheduler.weights import normalization

_SIGNS = {"max": 1.0, "min": -1.0}


class ResourcesWeigher(BaseHostWeigher):
    """Weighs the flavor's ``resources:<metric>=max`` (prefer the largest
    value) and ``=min`` (prefer the smallest) goals, scaled by
    ``[filter_scheduler] resources_weight_multiplier``.

    Goals may mix units (bytes per second and percent), so each metric
    is first divided by its largest absolute value among the hosts
    weighed; the raw weight is the sum of +scaled (max) and -scaled
    (min) values. With ``[metrics] weight_setting_scale`` minmax or rank,
    each goal is normalised that way instead, towards its preferred end
    (``metric_scale``), and the goals summed. A host missing a goal
    metric, or holding a stale one (``[metrics] max_age``), has no raw
    weight: it is kept and ranked
    with ``[metrics] weight_of_unavailable``, and it is left out of the
    scaling so that it cannot change how the other hosts compare.
    """

    def applies(self, spec: RequestSpec) -> bool:
        return bool(_goals(spec))

    def multiplier(self, spec: RequestSpec) -> float:
        return self.conf.filter_scheduler.resources_weight_multiplier

    def raw_column(self, table: HostTable, rows: np.ndarray,
                   spec: RequestSpec) -> np.ndarray:
        goals = _goals(spec)
        if not goals:
            return np.zeros(len(rows))
        cutoff = metrics_window(spec, self.conf).cutoff
        columns = [fresh_metric(table, metric, cutoff)[rows]
                   for metric, _sign in goals]
        scale = self.conf.metrics.weight_setting_scale
        if scale != metric_scale.RAW:
            return metric_scale.scaled_sum(
                scale, columns, [sign for _metric, sign in goals],
                len(rows))
        # Usually every host has every goal metric: no mask, masked
        # copies nor choices then (each a pass over the candidates).
        complete = not any(map(normalization.has_nan, columns))
        if not complete:
            available = np.ones(len(rows), dtype=bool)
            for column in columns:
                available &= ~np.isnan(column)
        total = np.zeros(len(rows))
        for (_metric, sign), column in zip(goals, columns, strict=True):
            scale = np.abs(column if complete else column[available]).max(
                initial=0.0)
            if scale:
                term = sign * column
                term /= scale
                total += term if complete else np.where(available, term,
                                                        0.0)
        return total if complete else np.where(available, total, np.nan)


def _goals(spec: RequestSpec) -> list[tuple[str, float]]:
    """(metric, sign) of each max/min goal; thresholds are filters'."""
    return [(resource.metric, _SIGNS[resource.goal])
            for resource in spec.resources if resource.goal in _SIGNS]
