"""ResourcesThresholdFilter: host metrics must meet the flavor's
``resources:<metric>=<op><quantity>`` thresholds."""

from scheduler.db import models
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.filters.metrics_filter import unavailable_detail
from scheduler.host_manager import HostState
from scheduler.request_spec import RequestSpec


def _number(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e18:
        return str(int(value))
    return f"{value:.6g}"


class ResourcesThresholdFilter(BaseHostFilter):
    """Rejects hosts whose metrics break a threshold extra spec.

    ``resources:network.rx.bps=<85M`` keeps hosts receiving less than
    85 MB/s (the scope is ``[metrics] extra_specs_scope``). Values are
    adjusted for claims the node has not reported yet; a metric missing,
    malformed or older than ``[metrics] max_age`` rejects the host.
    ``max``/``min`` goals are ResourcesWeigher's business.
    """

    def applies(self, spec: RequestSpec) -> bool:
        return any(r.is_threshold for r in spec.resources)

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        max_age = self.conf.metrics.max_age
        now = models.utcnow()
        for resource in spec.resources:
            if not resource.is_threshold:
                continue
            value = host.metric(resource.metric, now, max_age)
            if value is None:
                return Rejection(
                    f"{resource.metric} unavailable",
                    unavailable_detail(host, resource.metric, now, max_age))
            if not resource.satisfied_by(value):
                detail = f"{resource.metric} is {_number(value)}"
                reported = host.metrics[resource.metric].value
                if reported != value:
                    detail += (f" ({_number(reported)} reported, adjusted "
                               "for pending claims)")
                return Rejection(str(resource), detail)
        return None
