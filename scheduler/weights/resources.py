"""ResourcesWeigher: serves ``resources:<metric>=max|min`` extra specs."""

from collections.abc import Sequence

from scheduler.db.models import utcnow
from scheduler.host_manager import HostState
from scheduler.request_spec import RequestSpec
from scheduler.weights import BaseHostWeigher

_SIGNS = {"max": 1.0, "min": -1.0}


class ResourcesWeigher(BaseHostWeigher):
    """Weighs the flavor's ``resources:<metric>=max`` (prefer the largest
    value) and ``=min`` (prefer the smallest) goals, scaled by
    ``[filter_scheduler] resources_weight_multiplier``.

    Goals may mix units (bytes per second and percent), so each metric
    is first divided by its largest absolute value among the hosts
    weighed; the raw weight is the sum of +scaled (max) and -scaled
    (min) values. A host missing a goal metric, or holding a stale one
    (``[metrics] max_age``), has no raw weight: it is kept and ranked
    with ``[metrics] weight_of_unavailable``, and it is left out of the
    scaling so that it cannot change how the other hosts compare.
    """

    def applies(self, spec: RequestSpec) -> bool:
        return bool(_goals(spec))

    def multiplier(self, spec: RequestSpec) -> float:
        return self.conf.filter_scheduler.resources_weight_multiplier

    def raw_weight(self, host: HostState, spec: RequestSpec) -> float | None:
        return self.raw_weights([host], spec)[0]

    def raw_weights(self, hosts: Sequence[HostState],
                    spec: RequestSpec) -> list[float | None]:
        goals = _goals(spec)
        now = utcnow()
        max_age = self.conf.metrics.max_age
        rows: list[list[float] | None] = []
        for host in hosts:
            values = [host.metric(metric, now, max_age)
                      for metric, _ in goals]
            rows.append(None if any(v is None for v in values) else values)
        scales = [max((abs(row[i]) for row in rows if row is not None),
                      default=0.0)
                  for i in range(len(goals))]
        weights: list[float | None] = []
        for row in rows:
            if row is None:
                weights.append(None)
                continue
            # A scale of 0 means every host has 0: nothing to prefer.
            weights.append(sum(
                (sign * value / scale
                 for (_, sign), value, scale in zip(
                     goals, row, scales, strict=True)
                 if scale), 0.0))
        return weights


def _goals(spec: RequestSpec) -> list[tuple[str, float]]:
    """(metric, sign) of each max/min goal; thresholds are filters'."""
    return [(resource.metric, _SIGNS[resource.goal])
            for resource in spec.resources if resource.goal in _SIGNS]
