"""A node's report history: the values of its numeric metrics by report
time, over the last ``[metrics] history_window`` (plugin API, read-only).

The host cache appends a node's metrics when a decoded report carries a
newer timestamp for them (``appended``), and hands the result to the
node's next ``HostState`` as ``metric_history``. A history is never
changed, only replaced: host states built from older reports keep
theirs. Each metric's reports are one ``array('d')`` of timestamps
(seconds since 1970) and values, interleaved, and one of their running
sums: 32 bytes per report and metric plus about 300 bytes per metric
(docs/operator-guide.md, "Load-aware weighing").
"""

import bisect
import datetime
import math
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


def _start(pairs: array, after: float) -> int:
    """The index in ``pairs`` (time, value, time, value, ...) of the
    first report newer than ``after``."""
    # Most often all held reports are: a history's window is mostly the
    # one it is asked about.
    if pairs[0] > after:
        return 0
    return 2 * bisect.bisect_right(memoryview(pairs)[0::2], after)


def _window_start(pairs: array, window: float) -> int:
    """The index of the first report within ``window`` seconds of the
    newest, which is always in (however small the window)."""
    return min(_start(pairs, pairs[-2] - window), len(pairs) - 2)


def _running_sums(pairs: array) -> array:
    """Running (sum, sum of squares) of the values of ``pairs``,
    interleaved, one pair per report."""
    sums = array("d")
    total = squares = 0.0
    for value in pairs[1::2]:
        total += value
        squares += value * value
        sums.extend((total, squares))
    return sums


class MetricHistory:
    """The held reports of one node's metrics, by metric name."""

    __slots__ = ("_series", "_sums", "_memo")

    def __init__(self, series: Mapping[str, array] | None = None,
                 sums: Mapping[str, array] | None = None):
        # One array per metric, times and values interleaved: a second
        # array and a tuple per metric cost more than the values of an
        # hour of reports.
        self._series: dict[str, array] = dict(series or {})
        # Running sums beside them: a window's mean and stddev in constant
        # time. An instance history of 6 h holds 360 reports, and each
        # report of a node asks them for every instance on it.
        sums = sums or {}
        self._sums: dict[str, array] = {
            name: sums.get(name) or _running_sums(pairs)
            for name, pairs in self._series.items()}
        # Statistics by (metric, stat, window): every host version is
        # asked for the same few, by several requests. A race computes
        # one twice, harmlessly. ("moments" holds a (mean, stddev) pair.)
        self._memo: dict[tuple[str, str, float],
                         float | tuple[float, float] | None] | None = None

    def __len__(self) -> int:
        return len(self._series)

    def __eq__(self, other: object) -> bool:
        # By value: a refresh rebuilding a state from the same reports
        # holds an equal history.
        if not isinstance(other, MetricHistory):
            return NotImplemented
        return self._series == other._series

    def __hash__(self) -> int:
        return hash(tuple((name, len(pairs)) for name, pairs in
                          sorted(self._series.items())))

    def names(self) -> list[str]:
        return sorted(self._series)

    def reports(self, name: str) -> int:
        """How many reports of ``name`` are held."""
        return len(self._series.get(name, ())) // 2

    def series(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(timestamps as ``table.epoch()`` seconds, values), oldest
        first, as read-only arrays; None when nothing is held."""
        found = self._series.get(name)
        if found is None:
            return None
        pairs = np.frombuffer(found, dtype=float)
        pairs.flags.writeable = False
        return pairs[0::2], pairs[1::2]

    def statistic(self, name: str, stat: str,
                  window: float) -> float | None:
        """``stat`` of the reports of ``name`` newer than ``window``
        seconds before its newest one (all held ones if fewer); None
        when none is held."""
        key = (name, stat, window)
        memo = self._memo
        if memo is None:
            memo = self._memo = {}
        elif key in memo:
            return memo[key]
        pairs = self._series.get(name)
        value = None
        if pairs is not None:
            start = _window_start(pairs, window)
            if stat in ("mean", metric_stat.STDDEV):
                value = self._moment(name, stat, start)
            else:
                value = _statistic(stat, pairs[start + 1::2])
        memo[key] = value
        return value

    def moments(self, name: str,
                window: float) -> tuple[float, float] | None:
        """(mean, stddev) of the reports of ``name`` over ``window``, as
        ``statistic`` gives them, with one search for the window's start:
        the load predictors ask both of every instance on a host."""
        key = (name, "moments", window)
        memo = self._memo
        if memo is None:
            memo = self._memo = {}
        elif key in memo:
            return memo[key]
        pairs = self._series.get(name)
        found = (None if pairs is None
                 else self._moments(name, _window_start(pairs, window)))
        memo[key] = found
        return found

    def _moment(self, name: str, stat: str, start: int) -> float:
        """Mean or stddev of the reports of ``name`` from the one at
        ``start`` (its index in the interleaved pairs), by running sums."""
        mean, stddev = self._moments(name, start)
        return mean if stat == "mean" else stddev

    def _moments(self, name: str, start: int) -> tuple[float, float]:
        pairs, sums = self._series[name], self._sums[name]
        count = (len(pairs) - start) // 2
        first = pairs[start + 1]
        # The sums before the window: the running sums at its first
        # report, without that report.
        total = sums[-2] - (sums[start] - first)
        squares = sums[-1] - (sums[start + 1] - first * first)
        mean = total / count
        return mean, math.sqrt(max(squares / count - mean * mean, 0.0))

    def appended(self, metrics: Mapping[str, _Reading],
                 window: float) -> "MetricHistory":
        """This history with ``metrics`` (one report) added where they are
        newer than what is held, reports older than ``window`` seconds
        before the newest dropped; metrics the report no longer carries
        are dropped. A window of 0 keeps the newest report only."""
        return self.appended_readings(
            {name: (epoch(metric.timestamp), float(metric.value))
             for name, metric in metrics.items()}, window)

    def appended_readings(self, readings: Mapping[str, tuple[float, float]],
                          window: float) -> "MetricHistory":
        """``appended`` of readings already as ``(epoch seconds, value)``
        by name: the host cache reads instance entries straight into
        that form, 20 or more of them a report."""
        series: dict[str, array] = {}
        sums: dict[str, array] = {}
        held_series, held_sums = self._series, self._sums
        for name, (when, value) in readings.items():
            held = held_series.get(name)
            if held is None:
                series[name] = array("d", (when, value))
                # 0.0 + value, as a running sum from zero gives (-0.0).
                sums[name] = array("d", (0.0 + value, value * value))
                continue
            if when <= held[-2]:
                series[name], sums[name] = held, held_sums[name]
                continue
            cutoff = when - window
            if len(held) > 2 and held[0] <= cutoff < held[2]:
                start = 2  # a full window drops its oldest report
            else:
                start = _start(held, cutoff)
            start = max(start, len(held) + 2 - 2 * MAX_REPORTS)
            pairs = held[start:]
            pairs.extend((when, value))
            running = held_sums[name][start:]
            if running:
                running.extend((running[-2] + value,
                                running[-1] + value * value))
            else:
                running.extend((0.0 + value, value * value))
            series[name], sums[name] = pairs, running
        return MetricHistory(series, sums)

    def nbytes(self) -> int:
        """Bytes the held values take (not counting Python overhead)."""
        return sum(pairs.itemsize * len(pairs)
                   for held in (self._series, self._sums)
                   for pairs in held.values())


#: The history of a node never reported.
EMPTY = MetricHistory()
