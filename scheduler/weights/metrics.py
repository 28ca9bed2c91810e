"""MetricsWeigher: weigh hosts by the metrics their monitors report."""

import datetime
from collections.abc import Sequence

from scheduler.db.models import utcnow
from scheduler.host_manager import HostState
from scheduler.request_spec import RequestSpec
from scheduler.weights import BaseHostWeigher


class MetricsWeigher(BaseHostWeigher):
    """Weighs ``sum(ratio x metric value)`` over ``[metrics]
    weight_setting`` (``name=ratio, ...``), with values adjusted for
    pending claims and older than ``[metrics] max_age`` counted as
    unavailable. Scaled by ``[metrics] weight_multiplier``.

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

    def raw_weight(self, host: HostState, spec: RequestSpec) -> float | None:
        return self._weigh(host, utcnow())

    def raw_weights(self, hosts: Sequence[HostState],
                    spec: RequestSpec) -> list[float | None]:
        # One clock reading, so that every host ages against the same now.
        now = utcnow()
        return [self._weigh(host, now) for host in hosts]

    def _weigh(self, host: HostState,
               now: datetime.datetime) -> float | None:
        max_age = self.conf.metrics.max_age
        total = 0.0
        for name, ratio in self.conf.metrics.weight_setting:
            value = host.metric(name, now, max_age)
            if value is None:
                return None
            total += ratio * value
        return total
