"""Disk throughput of the node and usage of the instances filesystem."""

import psutil
from oslo_config import cfg
from oslo_log import log as logging

from compute_monitor import base
from compute_monitor.monitors import _delta

LOG = logging.getLogger(__name__)


class DiskMonitor(base.ResourceMonitorPluginBase):
    """Disk I/O rates and the size/usage of the instances filesystem.

    ``disk.read.bps``, ``disk.write.bps`` and ``disk.iops`` are computed
    over the interval since the previous call from
    psutil.disk_io_counters() (left out where the kernel exposes no
    counters, e.g. in some containers). ``disk.total/used/free`` (bytes)
    and ``disk.percent`` describe the filesystem holding
    ``[compute_monitor] instances_path``.
    """

    source = "psutil.disk"

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        super().__init__(conf)
        self._sampler = _delta.DeltaSampler(psutil.disk_io_counters)

    def get_metric_names(self) -> set[str]:
        return {"disk.read.bps", "disk.write.bps", "disk.iops",
                "disk.total", "disk.used", "disk.free", "disk.percent"}

    def get_metrics(self) -> list[dict]:
        previous, current, elapsed = self._sampler.sample()
        timestamp = base.utc_timestamp()
        entries = []
        if previous is not None and current is not None and elapsed > 0:
            read = _delta.increase(previous.read_bytes, current.read_bytes)
            written = _delta.increase(previous.write_bytes,
                                      current.write_bytes)
            operations = (
                _delta.increase(previous.read_count, current.read_count)
                + _delta.increase(previous.write_count, current.write_count))
            entries += [
                self._entry("disk.read.bps", read / elapsed, timestamp),
                self._entry("disk.write.bps", written / elapsed, timestamp),
                self._entry("disk.iops", operations / elapsed, timestamp),
            ]
        path = self.conf.compute_monitor.instances_path
        try:
            usage, problem = psutil.disk_usage(path), None
        except OSError as e:
            usage, problem = None, e.strerror or str(e)
        if usage is None:
            # A wrong instances_path must not also cost the I/O rates.
            # Logged here, not in the except block, where oslo.log would
            # repeat the exception's text.
            LOG.warning("Disk monitor: cannot get the usage of "
                        "instances_path %s: %s", path, problem)
            return entries
        entries += [
            self._entry("disk.total", usage.total, timestamp),
            self._entry("disk.used", usage.used, timestamp),
            self._entry("disk.free", usage.free, timestamp),
            self._entry("disk.percent", usage.percent, timestamp),
        ]
        return entries
