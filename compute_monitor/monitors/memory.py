"""Physical memory of the node."""

import psutil

from compute_monitor import base


class MemoryMonitor(base.ResourceMonitorPluginBase):
    """Physical memory from psutil.virtual_memory(), in bytes.

    ``memory.available`` is what can be given to new processes without
    swapping (includes reclaimable cache), unlike ``memory.free``.
    No configuration options.
    """

    source = "psutil.memory"

    def get_metric_names(self) -> set[str]:
        return {"memory.total", "memory.used", "memory.free",
                "memory.available", "memory.percent"}

    def get_metrics(self) -> list[dict]:
        memory = psutil.virtual_memory()
        timestamp = base.utc_timestamp()
        return [
            self._entry("memory.total", memory.total, timestamp),
            self._entry("memory.used", memory.used, timestamp),
            self._entry("memory.free", memory.free, timestamp),
            self._entry("memory.available", memory.available, timestamp),
            self._entry("memory.percent", memory.percent, timestamp),
        ]
