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
import weakref
from array import array
from collections.abc import Mapping
from collections.abc import Sequence

import numpy as np

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


def _first_start(block: array, width: int, when: float,
                 window: float) -> int:
    """The first row the first metric keeps once a report at ``when``
    is added (``MetricHistory.appended_readings``'s search)."""
    cutoff = when - window
    if block[0] > cutoff:
        return 0
    if len(block) > width and cutoff < block[width]:
        return 1
    return bisect.bisect_right(memoryview(block)[0::width], cutoff)


def _trims_agree(block: array, width: int, start: int,
                 times: Sequence[float], window: float) -> bool:
    """Whether every metric's reading advances past what it holds and
    keeps the rows from ``start`` on, as its own window and
    ``MAX_REPORTS`` would have it."""
    size = len(block)
    rows = size // width
    newest = size - width
    # The first row kept must be within each metric's window, and the
    # last one dropped out of it unless the cap dropped it. Negated
    # tests: a NaN compares false and so disagrees, leaving the report
    # to the per-metric arrays.
    kept = start * width if start < rows else -1
    dropped = (start - 1) * width if start > rows + 1 - MAX_REPORTS \
        and start > 0 else -1
    for offset, when in zip(range(0, width, RECORD), times, strict=True):
        cutoff = when - window
        if (when <= block[newest + offset]
                or (kept >= 0 and not block[kept + offset] > cutoff)
                or (dropped >= 0 and not block[dropped + offset] <= cutoff)):
            return False
    return True


def appended_row(block: array, width: int, times: Sequence[float],
                 values: Sequence[float], window: float) -> array | None:
    """``block`` with a report added as a row, its oldest rows dropped;
    None when the metrics would not keep the same number of records (a
    time not advancing, different trims)."""
    start = max(_first_start(block, width, times[0], window),
                len(block) // width + 1 - MAX_REPORTS)
    if not _trims_agree(block, width, start, times, window):
        return None
    row: list[float] = []
    if start * width < len(block):
        newest = len(block) - width
        for index, when, value in zip(range(newest, len(block), RECORD),
                                      times, values, strict=True):
            row += (when, value, block[index + 2] + value,
                    block[index + 3] + value * value)
    else:
        # All dropped: the sums start again, from zero (0.0 + value: a
        # running sum from zero gives -0.0 as 0.0).
        for when, value in zip(times, values, strict=True):
            row += (when, value, 0.0 + value, value * value)
    # Concatenated, not extended: the result is allocated at its size
    # (extending over-allocates by 1/16th, kept for the history's life).
    kept = block[start * width:] if start else block
    return kept + array("d", row)


def first_row(times: Sequence[float], values: Sequence[float]) -> array:
    """The block of a history's first report."""
    row: list[float] = []
    for when, value in zip(times, values, strict=True):
        row += (when, value, 0.0 + value, value * value)
    return array("d", row)


def packed(layout: Layout, series: Mapping[str, array]) -> array | None:
    """Per-metric ``series`` (one array of records each) of the metrics
    of ``layout`` as a block; None when they hold different numbers of
    reports."""
    held = [series[name] for name in layout.names]
    if len(set(map(len, held))) != 1:
        return None
    columns = [np.frombuffer(records, dtype=float).reshape(-1, RECORD)
               for records in held]
    return array("d", np.stack(columns, axis=1).tobytes())


def unpacked(layout: Layout, block: array) -> dict[str, array]:
    """The per-metric arrays of records ``block`` holds."""
    table = np.frombuffer(block, dtype=float).reshape(
        -1, len(layout.names), RECORD)
    return {name: array("d", table[:, index].tobytes())
            for index, name in enumerate(layout.names)}
