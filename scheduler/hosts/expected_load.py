"""How busy an instance is expected to be before its host reports it:
``[metrics] expected_instance_cpu`` (docs/operator-guide.md, "Load-aware
weighing").

The host cache sets each host state's share of a pending claim's vCPUs
(``pending_cpu_fraction``); the load-aware weighers add the instance
being placed with ``added_cpu_percent``. ``measured`` reads the instance
entries of the running instances of the same flavor (each its mean over
``[metrics] expected_window`` when ``instance_history_window`` keeps
their reports, else its newest entry), whose key is
(vCPUs, MiB): claims carry sizes, not flavor names, and two flavors of
the same size load a host alike as far as the scheduler can tell.
"""

import numpy as np
from oslo_config import cfg

from scheduler.hosts import instance_metrics
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec

VCPUS = "vcpus"
MEASURED = "measured"


def pending_cpu_fraction(conf: cfg.ConfigOpts) -> float:
    """Share of a claim's vCPUs assumed busy without a measurement of
    its flavor: 1 for ``vcpus``, the percent or the fallback percent."""
    setting = conf.metrics.expected_instance_cpu
    if setting == VCPUS:
        return 1.0
    if setting == MEASURED:
        return conf.metrics.expected_fallback_percent / 100.0
    return float(setting) / 100.0


def _flavor_load(flavor: tuple[int, int], window: float):
    """A column function: (sum, count) of the mean instance.cpu.percent
    over ``window`` of the host's instances of ``flavor``."""
    def value(host: HostState) -> tuple[float, int]:
        total, count = 0.0, 0
        for uuid, key in host.instance_flavors.items():
            if key != flavor:
                continue
            found = instance_metrics.instance_cpu_mean(host, uuid, window)
            if found is not None:
                total, count = total + found, count + 1
        return total, count
    return value


def measured_fraction(table: HostTable, flavor: tuple[int, int],
                      window: float) -> float | None:
    """The mean busy share of the fleet's measured instances of
    ``flavor`` (each its mean over ``window``), None when none is
    measured. Per host a cached column, recomputed only for hosts whose
    report or claims changed."""
    pairs = table.column(("flavor_load", flavor, window), "2f8",
                         _flavor_load(flavor, window))
    count = pairs[:, 1].sum() if len(pairs) else 0.0
    if not count:
        return None
    return float(pairs[:, 0].sum() / count / 100.0)


def instance_fraction(conf: cfg.ConfigOpts, spec: RequestSpec,
                      table: HostTable) -> float:
    """Share of the new instance's vCPUs expected busy; worked out once
    per request (``spec.memo``), for every load-aware weigher."""
    def measure() -> float:
        if conf.metrics.expected_instance_cpu != MEASURED:
            return pending_cpu_fraction(conf)
        found = measured_fraction(
            table, (spec.flavor.vcpus, spec.flavor.memory_mb),
            conf.metrics.expected_window)
        return pending_cpu_fraction(conf) if found is None else found
    return spec.memo("expected_cpu_fraction", measure)


def added_cpu_percent(conf: cfg.ConfigOpts, spec: RequestSpec,
                      table: HostTable, rows: np.ndarray) -> np.ndarray:
    """The cpu.percent the instance being placed adds on each host at
    ``rows``; a host without vCPUs counts as filled (100)."""
    busy = spec.flavor.vcpus * instance_fraction(conf, spec, table)
    vcpus = table.attribute("vcpus")[rows]
    with np.errstate(divide="ignore", invalid="ignore"):
        added = np.where(vcpus > 0, 100.0 * busy / vcpus, 100.0)
    return np.minimum(added, 100.0)
