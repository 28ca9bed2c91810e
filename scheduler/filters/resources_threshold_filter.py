"""ResourcesThresholdFilter: host metrics must meet the flavor's
``resources:<metric>=<op><quantity>`` thresholds."""

import numpy as np

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.filters import all_of
from scheduler.filters.metrics_filter import unavailable_detail
from scheduler.hosts.state import HostState
from scheduler.hosts.state import MetricsWindow
from scheduler.hosts.state import metrics_window
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import fresh_metric
from scheduler.request import extra_specs
from scheduler.request.spec import RequestSpec


def _thresholds(spec: RequestSpec) -> list[extra_specs.ResourceSpec]:
    """The thresholds among the request's resources extra specs."""
    return [r for r in spec.resources if r.is_threshold]


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
        return bool(_thresholds(spec))

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        window = metrics_window(spec, self.conf)
        return all_of((_met(resource, fresh_metric(table, resource.metric,
                                                   window.cutoff))
                       for resource in _thresholds(spec)), len(table))

    def why_rejected(self, host: HostState,
                     spec: RequestSpec) -> Rejection | None:
        window = metrics_window(spec, self.conf)
        # The first threshold the host breaks, as passes() tests them.
        for resource in _thresholds(spec):
            value = host.metric_since(resource.metric, window.cutoff)
            if value is None or not resource.satisfied_by(value):
                return _rejection(host, resource, value, window)
        return None


# The threshold operators that compare whole arrays; the others (=, ==
# and != use math.isclose) take one number at a time.
_ELEMENTWISE = frozenset({"<", "<=", ">", ">="})


def _met(resource: extra_specs.ResourceSpec,
         values: np.ndarray) -> np.ndarray:
    """Where a value is there and satisfies ``resource``: NaN fails
    every comparison but !=, so it is tested first."""
    return ~np.isnan(values) & _satisfied(resource, values)


def _satisfied(resource: extra_specs.ResourceSpec,
               values: np.ndarray) -> np.ndarray:
    """``resource.satisfied_by()`` of each value."""
    if resource.op in _ELEMENTWISE:
        return np.asarray(resource.satisfied_by(values), dtype=bool)
    return np.fromiter((resource.satisfied_by(value)
                        for value in values.tolist()),
                       dtype=bool, count=len(values))


def _rejection(host: HostState, resource: extra_specs.ResourceSpec,
               value: float | None, window: MetricsWindow) -> Rejection:
    """Why ``host``, whose metric is ``value``, breaks ``resource``."""
    if value is None:
        return Rejection(f"{resource.metric} unavailable",
                         unavailable_detail(host, resource.metric,
                                            window.now, window.max_age))
    detail = f"{resource.metric} is {_number(value)}"
    if ":" in resource.metric:
        # A windowed statistic: no one reported value to compare with.
        return Rejection(str(resource), detail)
    reported = host.metrics[resource.metric].value
    if reported != value:
        detail += (f" ({_number(reported)} reported, adjusted "
                   "for pending claims)")
    return Rejection(str(resource), detail)
