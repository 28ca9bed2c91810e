"""A node's report history: the values of its numeric metrics by report
time, over the last ``[metrics] history_window`` (plugin API, read-only).

The host cache appends a node's metrics when a decoded report carries a
newer timestamp for them (``appended``), and hands the result to the
node's next ``HostState`` as ``metric_history``. A history is never
changed, only replaced: host states built from older reports keep
theirs. Values are kept as two ``array('d')`` per metric (timestamps in
seconds since 1970, values): 16 bytes per report and metric plus about
400 bytes per metric (docs/operator-guide.md, "Load-aware weighing").
"""

import bisect
import datetime
import math
import threading
from array import array
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from scheduler.conf import metric_stat
from scheduler.hosts.table import epoch

#: Reports held per metric whatever the window: a node reporting every
#: second must not hold 3,600 per hour of window.
MAX_REPORTS = 720


class _Reading(Protocol):
    value: float
    timestamp: datetime.datetime


def _statistic(stat: str, values: Sequence[float]) -> float:
    """``stat`` of a non-empty run of values. Plain Python: a window
    holds tens of reports, where NumPy's per-call cost (a p95 took 100
    µs) would dominate a host's refresh."""
    count = len(values)
    if stat == "max":
        return max(values)
    if stat == "mean":
        return math.fsum(values) / count
    if stat == metric_stat.STDDEV:
        mean = math.fsum(values) / count
        return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / count)
    if stat == "p95":
        # Linear interpolation between the closest ranks, as
        # numpy.percentile does by default.
        ordered = sorted(values)
        rank = 0.95 * (count - 1)
        low = int(rank)
        high = min(low + 1, count - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
    return values[-1]


class MetricHistory:
    """The held reports of one node's metrics, by metric name."""

    __slots__ = ("_series", "_memo", "_lock")

    def __init__(self, series: Mapping[str, tuple[array, array]]
                 | None = None):
        self._series: dict[str, tuple[array, array]] = dict(series or {})
        # Statistics by (metric, stat, window): every host version is
        # asked for the same few, by several requests.
        self._memo: dict[tuple[str, str, float], float | None] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._series)

    def __eq__(self, other: object) -> bool:
        # By value: a refresh rebuilding a state from the same reports
        # holds an equal history.
        if not isinstance(other, MetricHistory):
            return NotImplemented
        return self._series == other._series

    def __hash__(self) -> int:
        return hash(tuple((name, len(pair[0])) for name, pair in
                          sorted(self._series.items())))

    def names(self) -> list[str]:
        return sorted(self._series)

    def reports(self, name: str) -> int:
        """How many reports of ``name`` are held."""
        found = self._series.get(name)
        return 0 if found is None else len(found[0])

    def series(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(timestamps as ``table.epoch()`` seconds, values), oldest
        first, as read-only arrays; None when nothing is held."""
        found = self._series.get(name)
        if found is None:
            return None
        epochs, values = (np.frombuffer(part, dtype=float)
                          for part in found)
        epochs.flags.writeable = values.flags.writeable = False
        return epochs, values

    def statistic(self, name: str, stat: str,
                  window: float) -> float | None:
        """``stat`` of the reports of ``name`` newer than ``window``
        seconds before its newest one (all held ones if fewer); None
        when none is held."""
        key = (name, stat, window)
        if key in self._memo:
            return self._memo[key]
        found = self._series.get(name)
        value = None
        if found is not None:
            epochs, values = found
            start = bisect.bisect_right(epochs, epochs[-1] - window)
            value = _statistic(stat, values[start:])
        with self._lock:
            self._memo[key] = value
        return value

    def appended(self, metrics: Mapping[str, _Reading],
                 window: float) -> "MetricHistory":
        """This history with ``metrics`` (one report) added where they are
        newer than what is held, reports older than ``window`` seconds
        before the newest dropped; metrics the report no longer carries
        are dropped. A window of 0 keeps the newest report only."""
        series: dict[str, tuple[array, array]] = {}
        for name, metric in metrics.items():
            when = epoch(metric.timestamp)
            held = self._series.get(name)
            if held is None:
                series[name] = array("d", (when,)), array("d", (
                    float(metric.value),))
                continue
            epochs, values = held
            if when <= epochs[-1]:
                series[name] = held
                continue
            start = max(bisect.bisect_right(epochs, when - window),
                        len(epochs) + 1 - MAX_REPORTS)
            epochs, values = epochs[start:], values[start:]
            epochs.append(when)
            values.append(float(metric.value))
            series[name] = epochs, values
        return MetricHistory(series)

    def nbytes(self) -> int:
        """Bytes the held values take (not counting Python overhead)."""
        return sum(part.itemsize * len(part)
                   for pair in self._series.values() for part in pair)


#: The history of a node never reported.
EMPTY = MetricHistory()
