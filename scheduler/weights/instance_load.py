"""InstanceLoadWeigher: predict a host's CPU load from the instances the
scheduler placed there."""

import math

import numpy as np

from scheduler.hosts import expected_load
from scheduler.hosts import instance_metrics
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec
from scheduler.weights import BaseHostWeigher


def predicted_busy_vcpus(host: HostState, fallback: float,
                         window: float, risk_factor: float = 0.0) -> float:
    """vCPUs the host's claimed instances are expected to keep busy:
    each measured one its vCPUs x its mean instance.cpu.percent over
    ``window`` (``instance_metrics.instance_cpu_moments``), the others (not
    reported yet, pending, placed by this request) their vCPUs x
    ``fallback``; plus ``risk_factor`` x the spread of that sum (the
    instances' standard deviations over the window, taken as
    independent: a real VM's load wanders about its own level far more
    than with its neighbours')."""
    busy = variance = 0.0
    measured_vcpus = 0
    for uuid, (vcpus, _memory_mb) in host.instance_flavors.items():
        found = instance_metrics.instance_cpu_moments(host, uuid, window)
        if found is None:
            continue
        percent, spread = found
        busy += vcpus * min(max(percent, 0.0), 100.0) / 100.0
        measured_vcpus += vcpus
        if risk_factor and spread is not None:
            scaled = vcpus * spread / 100.0
            variance += scaled * scaled
    # Claims whose instances have no measurement, including those this
    # request consumed (not among instance_flavors).
    unmeasured = max(host.vcpus_claimed - measured_vcpus, 0)
    return busy + unmeasured * fallback + risk_factor * math.sqrt(variance)


class InstanceLoadWeigher(BaseHostWeigher):
    """Weighs ``-(predicted cpu.percent)``: the load of the instances the
    scheduler has claims for on the host (each measured one at its mean
    instance.cpu.percent over ``[metrics] expected_window``, held when
    ``[metrics] instance_history_window`` is set, else its newest entry;
    the others at ``[metrics] expected_instance_cpu``), plus
    ``[metrics] instance_load_risk_factor`` standard deviations of that
    sum, over the host's vCPUs, plus the new instance's expected load.
    Unlike the host's own cpu.percent, it forgets the load of instances
    that have left and counts the load of those placed since the last
    report. Scaled by
    ``[metrics] instance_load_weight_multiplier``.
    """

    def multiplier(self, spec: RequestSpec) -> float:
        return self.conf.metrics.instance_load_weight_multiplier

    def raw_column(self, table: HostTable, rows: np.ndarray,
                   spec: RequestSpec) -> np.ndarray:
        fallback = expected_load.pending_cpu_fraction(self.conf)
        window = self.conf.metrics.expected_window
        risk = self.conf.metrics.instance_load_risk_factor
        busy = table.column(
            ("instance_load", fallback, window, risk), float,
            lambda host: predicted_busy_vcpus(host, fallback, window,
                                              risk))[rows]
        vcpus = table.attribute("vcpus")[rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            load = np.where(vcpus > 0, 100.0 * busy / vcpus, np.nan)
        added = expected_load.added_cpu_percent(self.conf, spec, table,
                                                rows)
        return -(load + added)
