"""A window of one metric's records in a report history
(``scheduler.hosts.history``): where it starts, and its statistics."""

import bisect
import math
from array import array
from collections.abc import Mapping
from collections.abc import Sequence

from scheduler.conf import metric_stat
from scheduler.hosts.history_block import RECORD


def statistic(stat: str, values: Sequence[float]) -> float:
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


def first_after(records: array, offset: int, stride: int, after: float) -> int:
    """The first report newer than ``after`` (its number) of the metric
    whose records are ``offset`` into every ``stride`` doubles of
    ``records`` (its time first)."""
    # Most often all held reports are: a history's window is mostly the
    # one it is asked about.
    if records[offset] > after:
        return 0
    return bisect.bisect_right(memoryview(records)[offset::stride], after)


def window_start(records: array, offset: int, stride: int,
                  window: float) -> int:
    """The first report within ``window`` seconds of the newest, which
    is always in (however small the window)."""
    newest = len(records) - stride
    return min(first_after(records, offset, stride,
                           records[newest + offset] - window),
               newest // stride)


def moments(records: array, offset: int, stride: int,
             window: float) -> tuple[float, float]:
    """Mean and stddev of a metric's reports over ``window`` (located
    as for ``first_after``), by running sums."""
    start = window_start(records, offset, stride, window) * stride + offset
    newest = len(records) - stride + offset
    count = (newest - start) // stride + 1
    first = records[start + 1]
    # The sums before the window: the running sums at its first report,
    # without that report.
    total = records[newest + 2] - (records[start + 2] - first)
    squares = records[newest + 3] - (records[start + 3] - first * first)
    mean = total / count
    return mean, math.sqrt(max(squares / count - mean * mean, 0.0))


def appended_series(held_series: Mapping[str, array],
                    readings: Mapping[str, tuple[float, float]],
                    window: float, cap: int) -> dict[str, array]:
    """The per-metric arrays of records of ``held_series`` with
    ``readings`` (``(epoch seconds, value)`` by name) added where newer
    than what is held, records older than ``window`` before the newest
    dropped and at most ``cap`` kept; metrics not in ``readings`` are
    dropped."""
    series: dict[str, array] = {}
    # A history at the cap drops one more report than the window.
    full = RECORD * cap
    for name, (when, value) in readings.items():
        held = held_series.get(name)
        if held is None:
            # 0.0 + value, as a running sum from zero gives (-0.0).
            series[name] = array("d", (when, value, 0.0 + value,
                                       value * value))
            continue
        if when <= held[-RECORD]:
            series[name] = held
            continue
        # The two common cases inline (this runs for every metric of
        # every report): nothing leaves the window, or its oldest.
        cutoff = when - window
        if held[0] > cutoff:
            start = 0
        elif len(held) > RECORD and cutoff < held[RECORD]:
            start = RECORD
        else:
            start = RECORD * first_after(held, 0, RECORD, cutoff)
        if len(held) - start >= full:
            start = len(held) + RECORD - full
        records = held[start:]
        # fromlist, not extend: array.extend of a tuple goes item by
        # item through the generic iterator, twice fromlist's cost.
        if records:
            records.fromlist([when, value, records[-2] + value,
                              records[-1] + value * value])
        else:
            records.fromlist([when, value, 0.0 + value, value * value])
        series[name] = records
    return series
