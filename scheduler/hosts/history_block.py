"""A node's report history as one block: the records of all its metrics
side by side, one row per report (``[metrics] history_window``).

``MetricHistory.appended_report`` keeps a node's reports this way while
every metric of the report gains a record and drops the same number of
old ones: appending a report then copies one array and adds one row,
where a history of one array per metric copies and extends 20 arrays
(and a dict) per report. A row holds, per metric in the order of its
``names`` (the layout), the record a per-metric array would hold: time,
value, running sum and running sum of squares. The i-th row is each
metric's i-th held report; the metrics' times need not be equal.
"""

import bisect
import datetime
import itertools
import weakref
from array import array
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence

import numpy as np

from scheduler.hosts.table import epoch

#: Reports held per metric whatever the window: a node reporting every
#: second must not hold 3,600 per hour of window.
MAX_REPORTS = 720

#: Doubles per held report: time, value, running sum, running sum of
#: squares.
RECORD = 4


class Layout:
    """The metric names of a block (the tuple reports are given with)
    and each one's offset in a row."""

    __slots__ = ("names", "offsets", "width", "__weakref__")

    def __init__(self, names: tuple[str, ...]):
        self.names = names
        self.offsets = {name: RECORD * index
                        for index, name in enumerate(names)}
        self.width = RECORD * len(names)


# One layout per tuple of names for all the nodes that report them: a
# history holds a reference, not its own dict of offsets. Weak: a layout
# no node reports any longer goes.
_LAYOUTS: "weakref.WeakValueDictionary[tuple[str, ...], Layout]" = \
    weakref.WeakValueDictionary()


def layout_of(names: tuple[str, ...]) -> Layout | None:
    """The layout of ``names``; None when they cannot be one (none, or
    a name twice: a report's readings by name keep the last)."""
    found = _LAYOUTS.get(names)
    if found is None:
        if not names or len(set(names)) != len(names):
            return None
        found = _LAYOUTS[names] = Layout(names)
    return found


def appended_row(block: array, width: int, times: Sequence[float],
                 values: Sequence[float], window: float) -> array | None:
    """``block`` with a report added as a row, its oldest rows dropped;
    None when the metrics would not keep the same number of records (a
    time not advancing, different trims)."""
    size = len(block)
    # The first metric's first kept record (its index in the block), as
    # ``appended_readings`` finds it: the two common cases first.
    cutoff = times[0] - window
    if block[0] > cutoff:
        start = 0
    elif size > width and cutoff < block[width]:
        start = width
    else:
        start = width * bisect.bisect_right(memoryview(block)[0::width],
                                            cutoff)
    # Every metric must keep the rows from ``start`` on: the first one
    # within its own window, the one before out of it, unless the cap
    # dropped that one (a history at MAX_REPORTS drops one more).
    dropped = start - width
    capped = size + width - width * MAX_REPORTS
    if start <= capped:
        start, dropped = capped, -1
    newest = size - width
    ahead, behind = newest - start, newest - dropped
    row: list[float] = []
    # Negated tests: a NaN compares false and so disagrees, leaving the
    # report to the per-metric arrays.
    for index, when, value in zip(range(newest, size, RECORD), times,
                                  values, strict=True):
        cutoff = when - window
        if (when <= block[index]
                or (start < size and not block[index - ahead] > cutoff)
                or (dropped >= 0 and not block[index - behind] <= cutoff)):
            return None
        row += (when, value, block[index + 2] + value,
                block[index + 3] + value * value)
    if start == size:
        # All dropped: the sums start again.
        return first_row(times, values)
    # Concatenated, not extended: the result is allocated at its size
    # (extending over-allocates by 1/16th, kept for the history's life).
    return (block[start:] if start else block) + array("d", row)


def epochs(moments: Iterable[datetime.datetime | None]) -> list[float]:
    """``table.epoch()`` of each of ``moments``, converted once per run
    of one object: a report's metrics mostly share one
    (``metric_entries.cached_timestamp``), a monitor plugin's at least."""
    found: list = []
    last = when = None
    for moment in moments:
        if moment is not last:
            last, when = moment, epoch(moment)
        found.append(when)
    return found


def report_times(held: float | Sequence[float],
                 metrics: int) -> Sequence[float]:
    """A held-back report's times (``held_times``) by metric again."""
    return (held,) * metrics if type(held) is float else held


def held_times(times: float | Sequence[float],
               metrics: int) -> float | tuple[float, ...]:
    """A held-back report's times (each of its ``metrics``', or one float
    for all) as ``appended_rows`` takes them: one float when every metric
    has it (the pass then checks less), but for 0.0 or -0.0 (their sign
    kept as given)."""
    if type(times) is float:
        return times if times else (times,) * metrics
    first = times[0]
    # Not for 0.0: -0.0 counts as equal, and would be held as 0.0.
    if type(first) is float and first and times.count(first) == len(times):
        return first
    return tuple(times)


def appended_rows(block: array, width: int,
                  times: Sequence[float | Sequence[float]],
                  rows: Sequence[array], window: float) -> array | None:
    """``block`` with reports added as rows, all at once: each report's
    time (``times``: one for all its metrics, or one per metric) and
    values (``rows``, an ``array('d')`` each), as ``appended_row`` one
    report after the other leaves it, running sums included, to the
    bit. None where one of its checks fails (a time not advancing, a
    metric trimmed unlike the first), all held rows leave a report's
    window (the sums start again) or the history reaches
    ``MAX_REPORTS``: the report-by-report path then decides. (A NaN
    added to a NaN sum may keep the other's payload bits; reports,
    JSON, hold no NaN.)"""
    size, count = len(block) // width, len(times)
    metrics = width // RECORD
    if size + count > MAX_REPORTS or not window > 0:
        return None
    held = np.frombuffer(block, dtype=float).reshape(size, metrics, RECORD)
    stamps = held[:, :, 0]
    if (all(type(when) is float for when in times)
            and (stamps == stamps[:, :1]).all()):
        # Every row of one time: a metric's checks are the first one's
        # (the simulator's reports, one monitor plugin's).
        added_times = np.array(times)[:, None]
        start = _start_when_even(block, width, times, window)
    else:
        added_times = np.array([report_times(when, metrics)
                                for when in times], dtype=float)
        if added_times.shape != (count, metrics):
            return None
        start = _start_per_metric(held, added_times, window)
    if start is None:
        return None
    # Row 0: the newest held, whose running sums the reports add to.
    added = np.empty((count + 1, metrics, RECORD))
    added[0] = held[-1]
    added[1:, :, 0] = added_times
    values = added[1:, :, 1]
    values[...] = np.frombuffer(b"".join(rows), dtype=float).reshape(
        count, metrics)
    # Past the doubles' range as Python's arithmetic goes: inf, quietly.
    with np.errstate(over="ignore", invalid="ignore"):
        np.multiply(values, values, out=added[1:, :, 3])
        added[1:, :, 2] = values
        # Accumulated in order, as one report after another adds them.
        np.add.accumulate(added[:, :, 2:], axis=0, out=added[:, :, 2:])
    kept = block[min(start, size) * width:]
    return kept + array("d", added[1 + max(start - size, 0):].tobytes())


def appended_rows_together(blocks: Sequence[array], width: int,
                           times: Sequence[Sequence[float]],
                           rows: Sequence[Sequence[array]],
                           window: float) -> list[array | None]:
    """``appended_rows`` of several histories in one pass: ``blocks`` of
    as many rows each, each with as many reports held back, a float
    time per report (``times``) and its values (``rows``). To the bit
    what ``appended_rows`` gives each; None for a history whose held
    rows are not of one time each or that ``appended_rows`` would leave
    to the report-by-report path. The histories of a refresh's nodes
    fill their batches at the same report, and a pass's NumPy calls,
    not its rows, are most of its cost."""
    hosts, count = len(blocks), len(times[0])
    size, metrics = len(blocks[0]) // width, width // RECORD
    if size + count > MAX_REPORTS or not window > 0:
        return [None] * hosts
    held = np.frombuffer(b"".join(blocks), dtype=float).reshape(
        hosts, size, metrics, RECORD)
    stamps = held[:, :, :, 0]
    added_times = np.array(times, dtype=float)
    # _start_when_even's tests, each report against the one before it.
    before = np.concatenate((stamps[:, -1:, 0], added_times[:, :-1]),
                            axis=1)
    with np.errstate(invalid="ignore"):
        cutoffs = added_times[:, -1] - window
        fits = ((stamps == stamps[:, :, :1]).all(axis=(1, 2))
                & (before < added_times).all(axis=1)
                & (before > added_times - window).all(axis=1))
    # bisect_right of the cutoff in the held times, then in the added.
    starts = (stamps[:, :, 0] <= cutoffs[:, None]).sum(axis=1)
    starts += np.where(starts == size,
                       (added_times <= cutoffs[:, None]).sum(axis=1), 0)
    added = np.empty((hosts, count + 1, metrics, RECORD))
    added[:, 0] = held[:, -1]
    added[:, 1:, :, 0] = added_times[:, :, None]
    values = added[:, 1:, :, 1]
    values[...] = np.frombuffer(
        b"".join(itertools.chain.from_iterable(rows)),
        dtype=float).reshape(hosts, count, metrics)
    with np.errstate(over="ignore", invalid="ignore"):
        np.multiply(values, values, out=added[:, 1:, :, 3])
        added[:, 1:, :, 2] = values
        np.add.accumulate(added[:, :, :, 2:], axis=1,
                          out=added[:, :, :, 2:])
    found: list[array | None] = []
    for block, fit, start, rows_added in zip(blocks, fits.tolist(),
                                             starts.tolist(), added,
                                             strict=True):
        found.append(
            block[min(start, size) * width:] + array(
                "d", rows_added[1 + max(start - size, 0):].tobytes())
            if fit else None)
    return found


def _start_when_even(block: array, width: int, times: Sequence[float],
                     window: float) -> int | None:
    """``appended_rows``' first kept row, or None, when every held row
    and every report holds one time for all its metrics."""
    newest = block[-width]
    # appended_row's tests, as it makes them (a gap compared with the
    # window would round otherwise); negated: a NaN fails them.
    for when in times:
        if not (newest < when and newest > when - window):
            return None
        newest = when
    # The first row newer than the last report's window, as each
    # report's trim in turn leaves it (a later cutoff is never earlier).
    cutoff = times[-1] - window
    size = len(block) // width
    start = bisect.bisect_right(memoryview(block)[0::width], cutoff)
    if start == size:
        start += bisect.bisect_right(times, cutoff)
    return start


def _start_per_metric(held: np.ndarray, added_times: np.ndarray,
                      window: float) -> int | None:
    """``appended_rows``' first kept row, or None: ``appended_row``'s
    tests on each report in turn, for all of them at once."""
    size, count = len(held), len(added_times)
    # Every row, held then added (negated tests: a NaN fails them, and
    # says nothing: infinite times give one).
    stamps = np.concatenate((held[:, :, 0], added_times))
    with np.errstate(invalid="ignore"):
        cutoffs = added_times - window
        if not (np.diff(stamps[size - 1:], axis=0) > 0).all():
            return None
    # Where each report's trim starts, by the first metric (later rows
    # are newer than its window's start): its own row, all held dropped.
    starts = np.searchsorted(stamps[:, 0], cutoffs[:, 0], side="right")
    if (starts >= np.arange(size, size + count)).any():
        return None
    # Every metric keeps the rows from there: the first within its own
    # window, the one before out of it when the trim moved.
    moved = starts > np.concatenate(([0], starts[:-1]))
    if (not (stamps[starts] > cutoffs).all()
            or not (stamps[starts[moved] - 1] <= cutoffs[moved]).all()):
        return None
    return int(starts[-1])


def first_row(times: Sequence[float], values: Sequence[float]) -> array:
    """The block of a history's first report (0.0 + value: a running sum
    from zero gives -0.0 as 0.0)."""
    row: list[float] = []
    for when, value in zip(times, values, strict=True):
        row += (when, value, 0.0 + value, value * value)
    return array("d", row)


def packed(layout: Layout, series: Mapping[str, array]) -> array:
    """Per-metric ``series`` (one array of records each, as many of them
    each) of the metrics of ``layout`` as a block."""
    columns = [np.frombuffer(series[name], dtype=float).reshape(-1, RECORD)
               for name in layout.names]
    return array("d", np.stack(columns, axis=1).tobytes())


def unpacked(layout: Layout, block: array) -> dict[str, array]:
    """The per-metric arrays of records ``block`` holds."""
    table = np.frombuffer(block, dtype=float).reshape(
        -1, len(layout.names), RECORD)
    return {name: array("d", table[:, index].tobytes())
            for index, name in enumerate(layout.names)}
