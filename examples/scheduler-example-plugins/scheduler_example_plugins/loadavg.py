"""loadavg: the node's load averages over 1, 5 and 15 minutes."""

import os

from compute_monitor import base


class LoadAverageMonitor(base.ResourceMonitorPluginBase):
    """Reports ``loadavg.1m``, ``loadavg.5m`` and ``loadavg.15m``: the
    average number of runnable (and, on Linux, uninterruptible) tasks
    over each period, from ``os.getloadavg()``. No options."""

    source = "os.getloadavg"

    def get_metric_names(self) -> set[str]:
        return {"loadavg.1m", "loadavg.5m", "loadavg.15m"}

    def get_metrics(self) -> list[dict]:
        one, five, fifteen = os.getloadavg()
        timestamp = base.utc_timestamp()
        return [self._entry("loadavg.1m", one, timestamp),
                self._entry("loadavg.5m", five, timestamp),
                self._entry("loadavg.15m", fifteen, timestamp)]
