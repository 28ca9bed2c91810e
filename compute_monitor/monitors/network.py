"""Network throughput of the node."""

import psutil
from oslo_config import cfg

from compute_monitor import base
from compute_monitor.monitors import _delta

# Loopback traffic never leaves the node.
_IGNORED_NICS = frozenset({"lo"})


def _counters() -> dict[str, tuple[int, int]]:
    return {nic: (counters.bytes_recv, counters.bytes_sent)
            for nic, counters in psutil.net_io_counters(pernic=True).items()
            if nic not in _IGNORED_NICS}


class NetworkMonitor(base.ResourceMonitorPluginBase):
    """Bytes per second received and sent since the previous call.

    Summed over every NIC psutil.net_io_counters() lists except loopback.
    No configuration options.
    """

    source = "psutil.network"

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        super().__init__(conf)
        self._sampler = _delta.DeltaSampler(_counters)

    def get_metric_names(self) -> set[str]:
        return {"network.rx.bps", "network.tx.bps"}

    def get_metrics(self) -> list[dict]:
        previous, current, elapsed = self._sampler.sample()
        timestamp = base.utc_timestamp()
        if elapsed <= 0:
            return []
        rx = tx = 0
        for nic, (recv, sent) in current.items():
            # A NIC seen for the first time has no baseline yet; counting
            # its whole lifetime total as this window's traffic would spike.
            if nic in previous:
                rx += _delta.increase(previous[nic][0], recv)
                tx += _delta.increase(previous[nic][1], sent)
        return [self._entry("network.rx.bps", rx / elapsed, timestamp),
                self._entry("network.tx.bps", tx / elapsed, timestamp)]
