"""CPU frequency, cumulative times and utilisation percentages."""

import psutil
from oslo_config import cfg

from compute_monitor import base
from compute_monitor.monitors import _delta

# system time alone misses interrupt handling, which is kernel work too.
_KERNEL_FIELDS = ("system", "irq", "softirq")
# Linux already includes guest time in user/nice; adding it to the total
# again would understate every percentage on a busy hypervisor.
_DOUBLE_COUNTED = frozenset({"guest", "guest_nice"})


def _times() -> dict[str, float]:
    times = psutil.cpu_times()
    return {field: getattr(times, field) for field in times._fields
            if field not in _DOUBLE_COUNTED}


def _kernel(times: dict[str, float]) -> float:
    return sum(times.get(field, 0.0) for field in _KERNEL_FIELDS)


class CpuMonitor(base.ResourceMonitorPluginBase):
    """CPU of the whole node, summed over all logical CPUs, via psutil.

    Reports the current frequency (MHz, when the platform exposes it),
    cumulative user/kernel/idle/iowait seconds, and the share of each
    since the previous call (``cpu.percent`` is busy = 100 - idle -
    iowait). No configuration options.
    """

    source = "psutil.cpu"

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        super().__init__(conf)
        self._sampler = _delta.DeltaSampler(_times)

    def get_metric_names(self) -> set[str]:
        return {"cpu.frequency",
                "cpu.user.time", "cpu.kernel.time", "cpu.idle.time",
                "cpu.iowait.time",
                "cpu.user.percent", "cpu.kernel.percent",
                "cpu.idle.percent", "cpu.iowait.percent", "cpu.percent"}

    def get_metrics(self) -> list[dict]:
        previous, current, _elapsed = self._sampler.sample()
        timestamp = base.utc_timestamp()
        values: dict[str, float] = {}
        frequency = self._frequency()
        if frequency is not None:
            values["cpu.frequency"] = frequency
        values.update({
            "cpu.user.time": current["user"],
            "cpu.kernel.time": _kernel(current),
            "cpu.idle.time": current["idle"],
            "cpu.iowait.time": current.get("iowait", 0.0),
        })
        delta = {field: _delta.increase(previous.get(field, 0.0), value)
                 for field, value in current.items()}
        total = sum(delta.values())
        # No tick elapsed: there is nothing to divide, and 0 % would
        # wrongly advertise an idle node.
        if total > 0:
            idle = 100.0 * delta["idle"] / total
            iowait = 100.0 * delta.get("iowait", 0.0) / total
            values.update({
                "cpu.user.percent": 100.0 * delta["user"] / total,
                "cpu.kernel.percent": 100.0 * _kernel(delta) / total,
                "cpu.idle.percent": idle,
                "cpu.iowait.percent": iowait,
                "cpu.percent": 100.0 - idle - iowait,
            })
        return [self._entry(name, value, timestamp)
                for name, value in values.items()]

    @staticmethod
    def _frequency() -> float | None:
        try:
            frequency = psutil.cpu_freq()
        # Depending on platform and virtualisation it is missing, None or
        # fails reading sysfs; the frequency is optional, the rest is not.
        except Exception:
            return None
        if frequency is None or not frequency.current:
            return None
        return frequency.current
