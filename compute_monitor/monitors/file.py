"""Metrics an operator or another tool writes into a JSON file."""

import json

from oslo_config import cfg
from oslo_log import log as logging

from compute_monitor import base

LOG = logging.getLogger(__name__)


def _read(path: str) -> tuple[object, str | None]:
    """The JSON of ``path``, or why it cannot be read. The caller logs it
    outside the except block, where oslo.log would repeat the exception."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f), None
    except OSError as e:
        return None, e.strerror or str(e)
    # Invalid JSON and bytes that are not UTF-8.
    except ValueError as e:
        return None, str(e)


class FileMonitor(base.ResourceMonitorPluginBase):
    """Reports the metrics found in ``[compute_monitor] file_path``.

    The JSON file is read again on every call, so edits take effect on the
    next cycle. It holds either an object ``{"metric.name": number, ...}``
    or a list of ``{"name": ..., "value": ..., "timestamp": ...}`` entries
    (timestamp optional, defaults to the time of reading); an entry of
    the list may measure one instance (``{"name": "instance.cpu.percent",
    "value": 35, "instance": "<uuid>"}``, docs/operator-guide.md). A missing or
    malformed file logs a warning and reports nothing; single bad entries
    are left for the agent to reject.
    """

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        super().__init__(conf)
        self.source = "file:" + conf.compute_monitor.file_path
        self._names: set[str] = set()

    def get_metric_names(self) -> set[str]:
        return set(self._names)

    def get_metrics(self) -> list[dict]:
        path = self.conf.compute_monitor.file_path
        self.source = "file:" + path
        data, problem = _read(path)
        if problem is not None:
            LOG.warning("File monitor: cannot read metrics file %s: %s",
                        path, problem)
            return []
        timestamp = base.utc_timestamp()
        if isinstance(data, dict):
            entries = [self._entry(name, value, timestamp)
                       for name, value in data.items()]
        elif isinstance(data, list):
            entries = [self._from_item(item, timestamp) for item in data]
        else:
            LOG.warning("File monitor: metrics file %s holds a JSON %s; "
                        "expected an object or a list of entries",
                        path, type(data).__name__)
            return []
        self._names = {entry["name"] for entry in entries
                       if isinstance(entry, dict)
                       and isinstance(entry.get("name"), str)}
        return entries

    def _from_item(self, item: object, timestamp: str) -> object:
        if isinstance(item, dict) and "name" in item and "value" in item:
            return self._entry(item["name"], item["value"],
                               item.get("timestamp") or timestamp,
                               item.get("instance"))
        # Unchanged, so the agent's warning says exactly what is missing.
        return item
