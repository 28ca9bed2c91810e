"""A node's report history: the values of its numeric metrics by report
time, over the last ``[metrics] history_window`` (plugin API, read-only).

The host cache appends a node's metrics when a decoded report carries a
newer timestamp for them, and hands the result to the node's next
``HostState`` as ``metric_history``. A history is never changed, only
replaced (one holding reports back adds them to itself when first read,
which changes nothing it answers). Each metric's reports are records of
four doubles: timestamp (seconds since 1970), value, and the running sum
and sum of squares of the values, 32 bytes. Appended through
``appended_report`` (the host cache's reports), all metrics' records are
one block of rows (``history_block``); else, and while the metrics hold
different numbers of reports, one array per metric, about 250 bytes more
per metric (docs/operator-guide.md, "Load-aware weighing"). A report of
the block's metrics is held back, with up to ``DEFERRED_REPORTS`` of
them, and added in one pass when the history is first read or the batch
is full (a refresh's full batches in one pass for all:
``settle_together``): most versions are never read.
"""

import datetime
from array import array
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from scheduler.conf import metric_stat
from scheduler.hosts import history_block
from scheduler.hosts import history_window
from scheduler.hosts.history_block import MAX_REPORTS

#: Doubles per held report: time, value, running sum, running sum of
#: squares, in one array per metric rather than one of pairs and one of
#: sums: at 20 metrics a host, an array and its dict entry cost more.
_RECORD = history_block.RECORD
#: Reports a history holds back at most (``appended_report``): a pass
#: adding 16 costs about what 5 cost added one by one, and they are
#: kept meanwhile (about 2 KB a host at 6 metrics).
DEFERRED_REPORTS = 16
#: Held-back reports added one by one: a pass costs more than one or two.
_ONE_BY_ONE = 2
#: Histories one pass adds to at most (it copies their blocks, 38 KB each
#: at 20 metrics and an hour's window): ``settle_together``.
_TOGETHER = 256
_new_history = object.__new__


class _Reading(Protocol):
    value: float
    timestamp: datetime.datetime


class MetricHistory:
    """The held reports of one node's metrics, by metric name."""

    __slots__ = ("_series", "_layout", "_block", "_memo", "_deferred")

    def __init__(self, series: dict[str, array] | None = None,
                 layout: history_block.Layout | None = None,
                 block: array | None = None):
        # One array of records per metric, taken over, not copied: only
        # ``appended_readings`` builds them; plugins start from ``EMPTY``
        # and append. The running sums give a window's mean and stddev in
        # constant time (an instance history of 6 h holds 360 reports).
        # Or, from ``appended_report``, the same records as one ``block``
        # of rows of the metrics of ``layout`` (``history_block``; no
        # dict of series then: 64 bytes a host).
        self._series: dict[str, array] | None = (
            {} if series is None and block is None else series)
        self._layout = layout
        self._block = block
        # Statistics by (metric, stat, window): every host version is
        # asked for the same few, by several requests. A race computes
        # one twice, harmlessly. ("moments" holds a (mean, stddev) pair.)
        self._memo: dict[tuple[str, str, float],
                         float | tuple[float, float] | None] | None = None
        #: Reports held back (``appended_report``): (the history they
        #: follow, the window, their times, their values, the layout
        #: they are of); None once added.
        self._deferred: tuple[MetricHistory, float,
                              tuple[float | tuple[float, ...], ...],
                              tuple[Sequence[float], ...],
                              history_block.Layout] | None = None

    def _settle(self, block: array | None = None) -> None:
        """Add the reports held back to the history they follow: all at
        once (``history_block.appended_rows``) where that gives what one
        after the other gives, else one after the other; ``block``: them
        added already (``settle_together``). Readers call it first; two
        threads settling one history compute the same."""
        deferred = self._deferred
        if deferred is None:
            return
        base, window, times, rows, layout = deferred
        if base._deferred is not None:  # left to ``settle_together``
            base._settle()
        if (block is None and len(times) > _ONE_BY_ONE
                and base._layout is layout):
            block = history_block.appended_rows(base._block, layout.width,
                                                times, rows, window)
        if block is not None:
            settled = MetricHistory(None, layout, block)
        else:
            settled, names = base, layout.names
            for when, values in zip(times, rows, strict=True):
                settled = settled._appended_now(
                    names, history_block.report_times(when, len(names)),
                    values, window)
        # Cleared last: a reader finding them gone finds the rest set.
        self._series, self._layout, self._block = (
            settled._series, settled._layout, settled._block)
        self._deferred = None

    def _located(self, name: str) -> tuple[array, int, int] | None:
        """Where the records of ``name`` are: every ``stride`` doubles
        from ``offset`` of an array; None when none is held."""
        if self._deferred is not None:
            self._settle()
        layout = self._layout
        if layout is None:
            records = self._series.get(name)
            return None if records is None else (records, 0, _RECORD)
        offset = layout.offsets.get(name)
        return None if offset is None else (self._block, offset,
                                            layout.width)

    def _column(self, name: str, column: int) -> array:
        """Times (column 0) or values (1) of a held metric."""
        records, offset, stride = self._located(name)
        return records[offset + column::stride]

    def __len__(self) -> int:
        if self._deferred is not None:
            self._settle()
        layout = self._layout
        return len(self._series if layout is None else layout.names)

    def __eq__(self, other: object) -> bool:
        # By value (a state rebuilt from the same reports holds an equal
        # history), times and values only: the running sums of the same
        # reports differ by where the history began.
        if not isinstance(other, MetricHistory):
            return NotImplemented
        names = self.names()
        return names == other.names() and all(
            self._column(name, column) == other._column(name, column)
            for name in names for column in (0, 1))

    def __hash__(self) -> int:
        return hash(tuple((name, _RECORD * self.reports(name))
                          for name in self.names()))

    def names(self) -> list[str]:
        if self._deferred is not None:
            self._settle()
        layout = self._layout
        return sorted(self._series if layout is None else layout.names)

    def reports(self, name: str) -> int:
        """How many reports of ``name`` are held."""
        found = self._located(name)
        return 0 if found is None else len(found[0]) // found[2]

    def series(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(timestamps as ``table.epoch()`` seconds, values), oldest
        first, as read-only arrays; None when nothing is held."""
        found = self._located(name)
        if found is None:
            return None
        held, offset, stride = found
        records = np.frombuffer(held, dtype=float)
        records.flags.writeable = False
        return records[offset::stride], records[offset + 1::stride]

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
            found = self._located(name)
            if found is None:
                value = None
            else:
                records, offset, stride = found
                start = history_window.window_start(records, offset,
                                                    stride, window)
                value = history_window.statistic(stat, records[
                    start * stride + offset + 1::stride])
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
        # Located inline, not by ``_located``: asked of every instance
        # and host version, where a call and a tuple are a tenth.
        if self._deferred is not None:
            self._settle()
        layout = self._layout
        if layout is None:
            records = self._series.get(name)
            result = (None if records is None
                      else history_window.moments(records, 0, _RECORD,
                                                  window))
        else:
            offset = layout.offsets.get(name)
            result = (None if offset is None else
                      history_window.moments(self._block, offset,
                                             layout.width, window))
        memo[key] = result
        return result

    def appended(self, metrics: Mapping[str, _Reading],
                 window: float) -> "MetricHistory":
        """This history with ``metrics`` (one report) added where they are
        newer than what is held, reports older than ``window`` seconds
        before the newest dropped; metrics the report no longer carries
        are dropped. A window of 0 keeps the newest report only."""
        times = history_block.epochs(metric.timestamp
                                     for metric in metrics.values())
        return self.appended_readings(
            {name: (when, float(metric.value)) for (name, metric), when
             in zip(metrics.items(), times, strict=True)}, window)

    def appended_report(self, names: tuple[str, ...],
                        times: float | Sequence[float],
                        values: Sequence[float],
                        window: float,
                        unsettled: list["MetricHistory"] | None = None
                        ) -> "MetricHistory":
        """``appended_readings`` of one report given as columns: the
        metric ``names`` (one tuple object for every report of the same
        metrics, in the same order), each one's time (epoch seconds; one
        float: all metrics') and value, at the same positions. Held as
        one block of rows (``history_block``) while every metric gains a
        report and keeps as many as the others; else as
        ``appended_readings`` holds them, until they keep as many again.

        A report of the metrics of the block, its values an
        ``array('d')`` (kept, not copied: never change it), is held
        back: up to ``DEFERRED_REPORTS`` of them are added to the block
        in one pass when the history is first read or the next is due.
        Most versions are never read (a windowed statistic is asked of
        a host now and then, a report comes every minute), and a block
        copied per report was most of a report's cost in the cache.

        ``unsettled``: where a history whose batch this report finds
        full goes, its reports added later, with others', by
        ``settle_together`` (a refresh's); None: added now."""
        deferred = self._deferred
        count = len(names)
        # No layout is of no metrics: such a report is never held back.
        when = (history_block.held_times(times, count)
                if count and type(values) is array and values.typecode == "d"
                and window > 0 and len(values) == count
                and (type(times) is float or len(times) == count) else None)
        if deferred is not None:
            base, held_window, waiting, rows, layout = deferred
            held = layout.names
            if (when is not None and held_window == window
                    and (names is held or names == held)):
                if len(rows) < DEFERRED_REPORTS:
                    return _deferring(base, window, waiting + (when,),
                                      rows + (values,), layout)
                if unsettled is not None:
                    unsettled.append(self)
                    return _deferring(self, window, (when,), (values,),
                                      layout)
            self._settle()
        layout = self._layout
        if (when is not None and layout is not None
                and (names is layout.names or names == layout.names)):
            return _deferring(self, window, (when,), (values,), layout)
        return self._appended_now(names, times, values, window)

    def _appended_now(self, names: tuple[str, ...],
                      times: float | Sequence[float],
                      values: Sequence[float],
                      window: float) -> "MetricHistory":
        """``appended_report``, the report added now."""
        times = history_block.report_times(times, len(names))
        layout = self._layout
        if len(times) == len(values) == len(names):
            if layout is not None and (names is layout.names
                                       or names == layout.names):
                block = history_block.appended_row(
                    self._block, layout.width, times, values, window)
                if block is not None:
                    return MetricHistory(None, layout, block)
            elif layout is None and not self._series:
                layout = history_block.layout_of(names)
                if layout is not None:
                    return MetricHistory(None, layout, history_block.
                                         first_row(times, values))
        held = self.appended_readings(
            dict(zip(names, zip(times, values, strict=True), strict=True)),
            window)
        return held._packed(names)

    def _packed(self, names: tuple[str, ...]) -> "MetricHistory":
        """This history (of per-metric arrays) as a block of the layout
        of ``names`` when its metrics hold as many reports each."""
        series = self._series
        if len(set(map(len, series.values()))) == 1:
            layout = history_block.layout_of(names)
            if layout is not None:
                return MetricHistory(None, layout,
                                     history_block.packed(layout, series))
        return self

    def appended_readings(self, readings: Mapping[str, tuple[float, float]],
                          window: float) -> "MetricHistory":
        """``appended`` of readings already as ``(epoch seconds, value)``
        by name: the host cache reads instance entries straight into
        that form, 20 or more of them a report."""
        if self._deferred is not None:
            self._settle()
        held_series = (self._series if self._layout is None else
                       history_block.unpacked(self._layout, self._block))
        return MetricHistory(history_window.appended_series(
            held_series, readings, window, MAX_REPORTS))

    def nbytes(self) -> int:
        """Bytes the held values take (not counting Python overhead)."""
        if self._deferred is not None:
            self._settle()
        if self._layout is not None:
            return self._block.itemsize * len(self._block)
        return sum(records.itemsize * len(records)
                   for records in self._series.values())


def _deferring(base: MetricHistory, window: float,
               times: tuple[float | tuple[float, ...], ...],
               rows: tuple[Sequence[float], ...],
               layout: history_block.Layout) -> MetricHistory:
    """A history of ``base`` with reports of ``layout`` held back
    (``appended_report``)."""
    history = _new_history(MetricHistory)
    history._series = history._layout = history._block = history._memo = None
    history._deferred = (base, window, times, rows, layout)
    return history


def settle_together(histories: Iterable[MetricHistory]) -> None:
    """Add the reports ``histories`` hold back to the blocks they
    follow: those of one layout, window and shape in one pass
    (``history_block.appended_rows_together``) of at most ``_TOGETHER``,
    the others through ``_settle``. The same histories as one by one, to
    the bit; one a reader settles meanwhile (another thread) is left as
    that reader set it."""
    alike: dict[tuple, list] = {}
    for history in histories:
        # Read once: a reader may clear it meanwhile (never set it anew).
        deferred = history._deferred
        if deferred is None:
            continue
        base, window, times, _rows, layout = deferred
        if (base._deferred is None and base._layout is layout
                and len(times) > _ONE_BY_ONE
                and all(type(when) is float for when in times)):
            alike.setdefault((layout, window, len(base._block), len(times)),
                             []).append((history, deferred))
        else:
            history._settle()
    for (layout, window, *_shape), held in alike.items():
        for start in range(0, len(held), _TOGETHER):
            chunk = held[start:start + _TOGETHER]
            blocks = history_block.appended_rows_together(
                [deferred[0]._block for _, deferred in chunk], layout.width,
                [deferred[2] for _, deferred in chunk],
                [deferred[3] for _, deferred in chunk],
                window) if len(chunk) > 1 else [None]
            for (history, _), block in zip(chunk, blocks, strict=True):
                history._settle(block)


#: The history of a node never reported.
EMPTY = MetricHistory()
