"""MetricsFilter: every weighed metric must be reported and fresh."""

import datetime

from scheduler.db import models
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.host_manager import HostState
from scheduler.request_spec import RequestSpec


def unavailable_detail(host: HostState, name: str, now: datetime.datetime,
                       max_age: float) -> str:
    """Why ``host.metric(name, ...)`` is None, for explain output."""
    if name in host.bad_metrics:
        return f"{name} reported but not a number"
    metric = host.metrics.get(name)
    if metric is None:
        return f"{name} not reported"
    age = (now - metric.timestamp).total_seconds()
    return f"{name} is {age:.0f} s old, max_age {max_age:g} s"


class MetricsFilter(BaseHostFilter):
    """Rejects hosts missing a metric of ``[metrics] weight_setting``.

    A metric counts as missing when it was never reported, was reported
    with a value that is not a number, or is older than ``[metrics]
    max_age`` seconds. Enable it to keep MetricsWeigher from ranking
    hosts it knows nothing about.
    """

    def applies(self, spec: RequestSpec) -> bool:
        return bool(self.conf.metrics.weight_setting)

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        max_age = self.conf.metrics.max_age
        now = models.utcnow()
        for name, _ratio in self.conf.metrics.weight_setting:
            # A malformed report may sit next to an older good value;
            # the node's latest word on the metric is that it is broken.
            if (name in host.bad_metrics
                    or host.metric(name, now, max_age) is None):
                return Rejection(f"metric {name} unavailable",
                                 unavailable_detail(host, name, now, max_age))
        return None
