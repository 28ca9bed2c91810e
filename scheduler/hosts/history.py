"""A node's report history: the values of its numeric metrics by report
time, over the last ``[metrics] history_window`` (plugin API, read-only).

The host cache appends a node's metrics when a decoded report carries a
newer timestamp for them (``appended``), and hands the result to the
node's next ``HostState`` as ``metric_history``. A history never
changes: host states built from older reports keep theirs (versions
share buffers, each reading its own run of them). Each metric's reports
are one ``array('d')`` of records of four: timestamp (seconds since
1970), value, and the running sum and sum of squares of the values: 32
bytes per report and metric (up to a quarter more while a buffer
slides, see ``MetricHistory``) plus about 250 bytes per metric
(docs/operator-guide.md, "Load-aware weighing").
"""

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

#: Doubles per held report: time, value, running sum, running sum of
#: squares. One array per metric rather than one of (time, value) pairs
#: and one of sums: the cache holds 20 metrics of every host, and an
#: array object and its dict entry cost more than a report's values.
_RECORD = 4
#: Doubles of a history at MAX_REPORTS.
_FULL = _RECORD * MAX_REPORTS


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


def _start(records: array, first: int, end: int, after: float) -> int:
    """The index in ``records[first:end]`` (``_RECORD`` doubles a report,
    its time first) of the first report newer than ``after``, ``end``
    when none is."""
    # Most often all held reports are: a history's window is mostly the
    # one it is asked about.
    if records[first] > after:
        return first
    # By hand rather than bisect over a memoryview: a buffer exporting
    # itself cannot grow, and another thread may append to it.
    low, high = first // _RECORD, end // _RECORD
    while low < high:
        middle = (low + high) // 2
        if records[middle * _RECORD] > after:
            high = middle
        else:
            low = middle + 1
    return low * _RECORD


def _window_start(records: array, first: int, end: int,
                  window: float) -> int:
    """The index of the first report within ``window`` seconds of the
    newest, which is always in (however small the window)."""
    return min(_start(records, first, end, records[end - _RECORD] - window),
               end - _RECORD)


#: A metric's held reports: its buffer alone when that holds them all
#: and is never appended to (a first report), else (buffer, first, end),
#: the run ``buffer[first:end]``.
_Held = array | tuple[array, int, int]


def _run(held: _Held) -> tuple[array, int, int]:
    return (held, 0, len(held)) if type(held) is array else held


class MetricHistory:
    """The held reports of one node's metrics, by metric name.

    Versions share buffers: each holds, per metric, its run of a buffer,
    and a report is appended in place when the version it is added to
    ends where its buffer does (no other version wrote past it), else
    to a copy of the run. A copy of every metric's window per report was
    a sixth of a simulated day (the copies' reads miss the processor's
    caches: a fleet's histories are megabytes). A buffer whose dropped
    head outgrows a quarter of its run is copied to a fresh one on the
    next append: each record is copied about four times (not once per
    report it stays in the window), and a buffer holds at most a quarter
    more than its window (an eighth on average).
    """

    __slots__ = ("_series", "_memo")

    def __init__(self, series: dict[str, _Held] | None = None):
        # Only ``appended_readings`` builds them; plugins start from
        # ``EMPTY`` and append, never construct one. Records of
        # ``_RECORD`` doubles: time, value, running sum and sum of
        # squares. The running sums give a window's mean and stddev in
        # constant time: an instance history of 6 h holds 360 reports,
        # and each report of a node asks them for every instance on it.
        self._series: dict[str, _Held] = {} if series is None else series
        # Statistics by (metric, stat, window): every host version is
        # asked for the same few, by several requests. A race computes
        # one twice, harmlessly. ("moments" holds a (mean, stddev) pair.)
        self._memo: dict[tuple[str, str, float],
                         float | tuple[float, float] | None] | None = None

    def _column(self, name: str, column: int) -> array:
        buffer, first, end = _run(self._series[name])
        return buffer[first + column:end:_RECORD]

    def __len__(self) -> int:
        return len(self._series)

    def __eq__(self, other: object) -> bool:
        # By value: a refresh rebuilding a state from the same reports
        # holds an equal history.
        if not isinstance(other, MetricHistory):
            return NotImplemented
        # Times and values only: the running sums of the same reports
        # differ by where the history began.
        return self._series.keys() == other._series.keys() and all(
            self._column(name, column) == other._column(name, column)
            for name in self._series for column in (0, 1))

    def __hash__(self) -> int:
        return hash(tuple((name, self.reports(name))
                          for name in sorted(self._series)))

    def names(self) -> list[str]:
        return sorted(self._series)

    def reports(self, name: str) -> int:
        """How many reports of ``name`` are held."""
        held = self._series.get(name)
        if held is None:
            return 0
        _buffer, first, end = _run(held)
        return (end - first) // _RECORD

    def series(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(timestamps as ``table.epoch()`` seconds, values), oldest
        first, as read-only arrays; None when nothing is held."""
        held = self._series.get(name)
        if held is None:
            return None
        buffer, first, end = _run(held)
        # A copy: a buffer exporting itself could not grow.
        records = np.frombuffer(buffer[first:end], dtype=float)
        records.flags.writeable = False
        return records[0::_RECORD], records[1::_RECORD]

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
        if stat in ("mean", metric_stat.STDDEV):
            found = self.moments(name, window)
            value = None if found is None else found[stat != "mean"]
        else:
            held = self._series.get(name)
            value = None
            if held is not None:
                buffer, first, end = _run(held)
                value = _statistic(stat, buffer[_window_start(
                    buffer, first, end, window) + 1:end:_RECORD])
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
        held = self._series.get(name)
        found = None
        if held is not None:
            buffer, first, end = _run(held)
            found = _moments(buffer, _window_start(buffer, first, end,
                                                   window), end)
        memo[key] = found
        return found

    def appended(self, metrics: Mapping[str, _Reading],
                 window: float) -> "MetricHistory":
        """This history with ``metrics`` (one report) added where they are
        newer than what is held, reports older than ``window`` seconds
        before the newest dropped; metrics the report no longer carries
        are dropped. A window of 0 keeps the newest report only."""
        readings = {}
        # A report's metrics mostly share one timestamp object
        # (``metric_entries.cached_timestamp``): converted once.
        stamp = when = None
        for name, metric in metrics.items():
            if metric.timestamp is not stamp:
                stamp = metric.timestamp
                when = epoch(stamp)
            readings[name] = (when, float(metric.value))
        return self.appended_readings(readings, window)

    def appended_readings(self, readings: Mapping[str, tuple[float, float]],
                          window: float) -> "MetricHistory":
        """``appended`` of readings already as ``(epoch seconds, value)``
        by name: the host cache reads reports straight into that form."""
        series: dict[str, _Held] = {}
        held_series = self._series
        with _APPENDING:
            for name, (when, value) in readings.items():
                held = held_series.get(name)
                if held is None:
                    series[name] = _first(when, value)
                    continue
                # _run() inline: a call per metric of every report.
                if type(held) is tuple:
                    buffer, first, end = held
                else:
                    buffer, first, end = held, 0, len(held)
                if when <= buffer[end - _RECORD]:
                    series[name] = held
                    continue
                series[name] = _appended(held, buffer, first, end, when,
                                         value, window)
        return MetricHistory(series)

    def nbytes(self) -> int:
        """Bytes the held values take (not counting Python overhead)."""
        total = 0
        for held in self._series.values():
            _buffer, first, end = _run(held)
            total += 8 * (end - first)
        return total


#: Appends to shared buffers, one at a time: a background full load and
#: a request may append to the same version, and only one may extend its
#: buffers in place.
_APPENDING = threading.Lock()


def _first(when: float, value: float) -> array:
    """A metric's first report."""
    # 0.0 + value, as a running sum from zero gives (-0.0).
    return array("d", (when, value, 0.0 + value, value * value))


def _appended(held: _Held, buffer: array, first: int, end: int,
              when: float, value: float, window: float) -> _Held:
    """``held``, the run ``buffer[first:end]``, with a newer reading
    added, the records older than ``window`` seconds before it dropped.
    Under ``_APPENDING``."""
    # The two common cases first: nothing leaves the window, or its
    # oldest.
    cutoff = when - window
    if buffer[first] > cutoff:
        start = first
    elif end - first > _RECORD and cutoff < buffer[first + _RECORD]:
        start = first + _RECORD
    else:
        start = _start(buffer, first, end, cutoff)
    # A history at MAX_REPORTS drops one more report than the window.
    if end - start >= _FULL:
        start = end + _RECORD - _FULL
    if start == end:
        # Nothing left of the window: the sums start again from zero.
        return _first(when, value)
    if (held is buffer or len(buffer) != end
            or 4 * start > end - start):
        # A first report's buffer is never appended to; another version
        # wrote past this one's end; or the dropped head outgrew a
        # quarter of the run: a copy of the run.
        buffer, end, start = buffer[start:end], end - start, 0
    # fromlist, not extend: array.extend of a tuple goes item by item
    # through the generic iterator, twice fromlist's cost.
    buffer.fromlist([when, value, buffer[end - 2] + value,
                     buffer[end - 1] + value * value])
    return buffer, start, end + _RECORD


def _moments(buffer: array, start: int, end: int) -> tuple[float, float]:
    """Mean and stddev of the records ``buffer[start:end]``, by running
    sums."""
    count = (end - start) // _RECORD
    first = buffer[start + 1]
    # The sums before the window: the running sums at its first report,
    # without that report.
    total = buffer[end - 2] - (buffer[start + 2] - first)
    squares = buffer[end - 1] - (buffer[start + 3] - first * first)
    mean = total / count
    return mean, math.sqrt(max(squares / count - mean * mean, 0.0))


#: The history of a node never reported.
EMPTY = MetricHistory()
