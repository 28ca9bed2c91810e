"""A node's report history: the values of its numeric metrics by report
time, over the last ``[metrics] history_window`` (plugin API, read-only).

The host cache appends a node's metrics when a decoded report carries a
newer timestamp for them (``appended``), and hands the result to the
node's next ``HostState`` as ``metric_history``. A history never
changes: host states built from older reports keep theirs (versions
share buffers, each reading only its own records). Each metric's
reports are one ``array('d')`` of records of four: timestamp (seconds
since 1970), value, and the running sum and sum of squares of the
values: 32 bytes per report and metric (up to twice that while a buffer
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


class MetricHistory:
    """The held reports of one node's metrics, by metric name.

    Versions share their buffers: each version knows, per metric, the
    run of records it holds (its bounds), and a report is appended in
    place when the version it is appended to is the newest of its
    buffer (nothing was written past its end), else to a copy. Copying
    every metric's window at every report was a quarter of a simulated
    day's cache refreshes. A buffer whose dropped head outgrows its held
    run is copied to a fresh one on the next append: each record is
    copied about once, and a buffer holds at most twice its window.
    """

    __slots__ = ("_index", "_buffers", "_bounds", "_memo")

    def __init__(self, index: dict[str, int] | None = None,
                 buffers: list[array] | None = None,
                 bounds: array | None = None):
        # Only ``appended_readings`` builds them; plugins start from
        # ``EMPTY`` and append, never construct one. ``index``: each
        # metric's position in ``buffers`` (one array of records of
        # ``_RECORD`` doubles: time, value, running sum and sum of
        # squares) and in ``bounds`` (two entries: the index of its
        # first held record and the end of its last). The index and
        # buffer list are shared by versions with the same metrics.
        # The running sums give a window's mean and stddev in constant
        # time: an instance history of 6 h holds 360 reports, and each
        # report of a node asks them for every instance on it.
        self._index: dict[str, int] = {} if index is None else index
        self._buffers: list[array] = [] if buffers is None else buffers
        self._bounds: array = array("q") if bounds is None else bounds
        # Statistics by (metric, stat, window): every host version is
        # asked for the same few, by several requests. A race computes
        # one twice, harmlessly. ("moments" holds a (mean, stddev) pair.)
        self._memo: dict[tuple[str, str, float],
                         float | tuple[float, float] | None] | None = None

    def _held(self, name: str) -> tuple[array, int, int] | None:
        """(buffer, first, end) of ``name``'s held records, or None."""
        position = self._index.get(name)
        if position is None:
            return None
        bounds = self._bounds
        return (self._buffers[position], bounds[2 * position],
                bounds[2 * position + 1])

    def _columns(self, name: str, column: int) -> array:
        buffer, first, end = self._held(name)
        return buffer[first + column:end:_RECORD]

    def __len__(self) -> int:
        return len(self._index)

    def __eq__(self, other: object) -> bool:
        # By value: a refresh rebuilding a state from the same reports
        # holds an equal history.
        if not isinstance(other, MetricHistory):
            return NotImplemented
        # Times and values only: the running sums of the same reports
        # differ by where the history began.
        return self._index.keys() == other._index.keys() and all(
            self._columns(name, column) == other._columns(name, column)
            for name in self._index for column in (0, 1))

    def __hash__(self) -> int:
        return hash(tuple((name, self.reports(name))
                          for name in sorted(self._index)))

    def names(self) -> list[str]:
        return sorted(self._index)

    def reports(self, name: str) -> int:
        """How many reports of ``name`` are held."""
        found = self._held(name)
        return 0 if found is None else (found[2] - found[1]) // _RECORD

    def series(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(timestamps as ``table.epoch()`` seconds, values), oldest
        first, as read-only arrays; None when nothing is held."""
        found = self._held(name)
        if found is None:
            return None
        buffer, first, end = found
        # A copy: a buffer that exports itself cannot grow, and the
        # next version appends to it.
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
            held = self._held(name)
            if held is None:
                value = None
            else:
                buffer, _first, end = held
                value = _statistic(stat, buffer[
                    _window_start(*held, window) + 1:end:_RECORD])
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
        held = self._held(name)
        found = (None if held is None
                 else _moments(held[0], _window_start(*held, window),
                               held[2]))
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
        held_index = self._index
        same = held_index.keys() == readings.keys()
        # The common case: the same metrics as the previous report, whose
        # index (and, unless a buffer is replaced, buffer list) is shared.
        index = held_index if same else {
            name: position for position, name in enumerate(readings)}
        buffers = self._buffers if same else [None] * len(index)
        owned = not same
        bounds = array("q", bytes(16 * len(index)))
        held_buffers, held_bounds = self._buffers, self._bounds
        with _APPENDING:
            for name, reading in readings.items():
                position = index[name]
                old = position if same else held_index.get(name)
                if old is None:
                    buffer, first, end = _started(*reading), 0, _RECORD
                else:
                    buffer, first, end = _appended(
                        held_buffers[old], held_bounds[2 * old],
                        held_bounds[2 * old + 1], reading, window)
                if buffers[position] is not buffer:
                    if not owned:
                        buffers, owned = list(buffers), True
                    buffers[position] = buffer
                bounds[2 * position] = first
                bounds[2 * position + 1] = end
        return MetricHistory(index, buffers, bounds)

    def nbytes(self) -> int:
        """Bytes the held values take (not counting Python overhead)."""
        bounds = self._bounds
        return 8 * sum(bounds[1::2]) - 8 * sum(bounds[0::2])


#: Appends to shared buffers, one at a time: a background full load and
#: a request may append to the same version, and only one may extend its
#: buffers in place.
_APPENDING = threading.Lock()


def _started(when: float, value: float) -> array:
    """A buffer holding one report."""
    # 0.0 + value, as a running sum from zero gives (-0.0).
    return array("d", (when, value, 0.0 + value, value * value))


def _appended(buffer: array, first: int, end: int,
              reading: tuple[float, float],
              window: float) -> tuple[array, int, int]:
    """(buffer, first, end) of a metric's held records ``buffer[first:
    end]`` with ``reading`` added when newer, those older than
    ``window`` seconds before it dropped. Called under ``_APPENDING``."""
    when, value = reading
    if when <= buffer[end - _RECORD]:
        return buffer, first, end
    # The two common cases inline (this runs for every metric of every
    # report): nothing leaves the window, or its oldest.
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
        return _started(when, value), 0, _RECORD
    if len(buffer) != end or start > end - start:
        # Another version wrote past this one's end, or the dropped head
        # outgrew the held run: a copy of the run.
        buffer, end, start = buffer[start:end], end - start, 0
    buffer.extend((when, value, buffer[end - 2] + value,
                   buffer[end - 1] + value * value))
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
