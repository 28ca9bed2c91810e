"""Reports held back (``MetricHistory.appended_report``) and added to
their block in one pass (``history_block.appended_rows``) leave a history
indistinguishable from one appended report by report, to the last bit
of every running sum and statistic, whenever it is read."""

import datetime
import math
from array import array
from unittest import mock

import pytest
from hypothesis import example
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler.hosts import history
from scheduler.hosts import history_block
from scheduler.hosts.table import epoch
from tests.unit.hosts.test_history_block import NAMES
from tests.unit.hosts.test_history_block import T0
from tests.unit.hosts.test_history_block import WINDOWS
from tests.unit.hosts.test_history_block import _values
from tests.unit.hosts.test_history_block import assert_indistinguishable

_rarely = st.integers(0, 9).map(lambda n: n == 0)
# Each metric's time off the report's, by plugin: often all alike.
_skews = st.sampled_from([0.0, 0.0, 0.0, 0.25, -1.0, 29.0, -60.0])
_reports = st.fixed_dictionaries({
    # Mostly the usual minute; not advancing, back, a gap of a window.
    "step": st.sampled_from([60.0] * 30 + [0.0, -5.0, 1e-9, 30.0, 600.0,
                                          3600.0, 7200.0]),
    "values": st.lists(_values, min_size=4, max_size=4),
    "new_layout": _rarely,
    "layout": st.lists(st.sampled_from(NAMES), min_size=1, max_size=4,
                       unique=True).map(tuple),
    "new_window": _rarely,
    "window": st.sampled_from(WINDOWS),
    # Now and then a report's times off their plugins' usual skews.
    "jitter": st.one_of(*[st.none()] * 7, st.lists(
        st.sampled_from([0.0, 0.5, -0.5, 60.0, -60.0]), min_size=4,
        max_size=4)),
    # Appended to an older version (two refreshes from one).
    "back": st.sampled_from([0] * 8 + [1, 2]),
    # Read now: the held-back reports added then.
    "read": _rarely,
    # A report of one time given as one float, as the host cache does.
    "one_time": st.booleans(),
})


def replay(skews: list[float], reports: list[dict]) -> tuple[list, list]:
    got, want = [history.EMPTY], [history.EMPTY]
    interned: dict[tuple[str, ...], tuple[str, ...]] = {}
    names, when, window = NAMES[:3], T0, 3600.0
    for report in reports:
        if report["new_layout"]:
            names = interned.setdefault(report["layout"], report["layout"])
        if report["new_window"]:
            window = report["window"]
        when += report["step"]
        jitter = report["jitter"] or (0.0,) * 4
        times = [when + skew + off for skew, off
                 in zip(skews[:len(names)], jitter[:len(names)], strict=True)]
        values = array("d", map(float, report["values"][:len(names)]))
        base = max(len(got) - 1 - report["back"], 0)
        given = (times[0] if report["one_time"]
                 and times.count(times[0]) == len(times) else times)
        got.append(got[base].appended_report(names, given, values, window))
        want.append(want[base]._appended_now(names, times, values, window))
        if report["read"]:
            got[-1].names()
    return got, want


@settings(max_examples=300, deadline=None)
@given(st.lists(_skews, min_size=4, max_size=4),
       st.lists(_reports, max_size=60), st.booleans())
def test_held_back_reports_are_the_reports_appended_one_by_one(
        skews, reports, read_first):
    # A small cap and a short batch: runs past both within a few reports.
    with mock.patch.object(history_block, "MAX_REPORTS", 12), \
            mock.patch.object(history, "MAX_REPORTS", 12), \
            mock.patch.object(history, "DEFERRED_REPORTS", 5):
        got, want = replay(skews, reports)
        versions = zip(got, want, strict=True)
        if not read_first:  # the newest read first, the older after
            versions = reversed(list(versions))
        for mine, theirs in versions:
            assert_indistinguishable(mine, theirs)


def test_reports_are_held_back_up_to_the_batch_then_added_in_one_pass():
    names = NAMES[:2]
    held = history.EMPTY.appended_report(names, [T0, T0 + 0.5],
                                         [1.0, 2.0], 3600.0)
    with mock.patch.object(history_block, "appended_rows",
                           wraps=history_block.appended_rows) as batch:
        for step in range(1, history.DEFERRED_REPORTS + 2):
            when = T0 + 60.0 * step
            held = held.appended_report(names, [when, when + 0.5],
                                        array("d", [float(step)] * 2),
                                        3600.0)
        # The 17th report settled the 16 before it, in one pass.
        assert batch.call_count == 1
        assert [times[0] for times in batch.call_args.args[2]] == [
            T0 + 60.0 * step for step in range(1, 17)]
        assert held._deferred is not None
        assert held.reports("cpu.percent") == 18
        assert held._deferred is None
        assert held.statistic("cpu.percent", "max", 3600.0) == 17.0


def test_a_pass_keeps_only_the_newest_window_of_rows():
    block = history_block.first_row([T0], [5.0])
    rows = [array("d", [float(n)]) for n in range(1, 21)]
    times = [[T0 + 60.0 * n] for n in range(1, 21)]
    added = history_block.appended_rows(block, 4, times, rows, 600.0)
    # Newer than 10 minutes before the newest: the last 10 reports.
    assert list(added[0::4]) == [when for (when,) in times[10:]]
    assert list(added[1::4]) == [float(n) for n in range(11, 21)]
    assert added[-2] == 5.0 + sum(range(1, 21))


def test_a_pass_leaves_to_the_one_by_one_path_what_it_cannot_add():
    block = history_block.first_row([T0, T0 + 1.0], [1.0, 2.0])
    row = array("d", [3.0, 4.0])
    for times, window in [
            ([[T0 + 60.0, T0 + 1.0], [T0 + 120.0, T0 + 121.0]], 600.0),
            ([[T0 + 60.0, T0 + 61.0], [T0 + 60.0, T0 + 61.0]], 600.0),
            ([[T0 - 60.0, T0 + 61.0], [T0 + 60.0, T0 + 61.0]], 600.0),
            ([[T0 + 60.0, T0 + 61.0], [T0 + 660.0, T0 + 661.0]], 600.0),
            # The second metric's newest held is out of its window when
            # the first's is not: appended_row keeps neither in step.
            ([[T0 + 60.0, T0 + 61.0], [T0 + 600.5, T0 + 600.5]], 600.0),
            ([[T0 + 60.0, T0 + 61.0]] * 2, 0.0)]:
        assert history_block.appended_rows(block, 8, times, [row, row],
                                           window) is None


# Times as the host cache has them (epoch() of microsecond datetimes),
# windows whose subtraction rounds (90.1 s, 1.1 h), steps of a window,
# each metric off the report's time as its plugin stamps it.
_WINDOWS = st.sampled_from([60.0, 90.1, 180.0, 3600.0,
                            datetime.timedelta(hours=1.1).total_seconds(),
                            float("inf")])
_STEPS = st.sampled_from(["window", 60.0, 60.0, 30.0, 90.1, 0.000001,
                          0.0, -1.0])
_OFFSETS = st.sampled_from([0.0, 0.0, 0.0, 0.000001, 0.5, -0.25, 60.0])
_ROW_VALUES = st.sampled_from([0.0, -0.0, 0.1, 7.0, -3.5, 1e155, 1e300,
                               float("inf"), float("nan"), 2.0 ** 60])


def _one_by_one(block, width, times, rows, window):
    for when, row in zip(times, rows, strict=True):
        block = history_block.appended_row(block, width, when, row, window)
        if block is None:
            return None
    return block


@settings(max_examples=400, deadline=None)
@given(metrics=st.integers(1, 3), window=_WINDOWS,
       start=st.integers(0, 10 ** 6),
       held=st.lists(_STEPS, max_size=5),
       added=st.lists(_STEPS, min_size=1, max_size=6),
       skews=st.lists(_OFFSETS, min_size=3, max_size=3),
       jitter=st.lists(st.sampled_from([0.0] * 8 + [0.5, -0.25, 60.0]),
                       min_size=36, max_size=36),
       values=st.lists(_ROW_VALUES, min_size=36, max_size=36))
# The cap reached exactly, and passed by one.
@example(metrics=1, window=3600.0, start=0, held=[60.0] * 3,
         added=[60.0] * 4, skews=[0.0] * 3,
         jitter=[0.0] * 36, values=[1.0] * 36)
@example(metrics=1, window=3600.0, start=0, held=[60.0] * 3,
         added=[60.0] * 5, skews=[0.0] * 3,
         jitter=[0.0] * 36, values=[1.0] * 36)
# A cutoff equal to a held time.
@example(metrics=2, window=180.0, start=0, held=[60.0] * 4,
         added=[60.0] * 3, skews=[0.0] * 3,
         jitter=[0.0] * 36, values=[2.0] * 36)
def test_a_pass_is_the_reports_added_one_by_one(metrics, window, start,
                                                held, added, skews, jitter,
                                                values):
    width = 4 * metrics
    pool, jitters = iter(values), iter(jitter)
    when = epoch(datetime.datetime(2026, 1, 5) +
                 datetime.timedelta(microseconds=start * 7919))

    def report(kind):
        nonlocal when
        when += window if kind == "window" else kind
        # Each metric off by its plugin's skew; now and then off that.
        return ([when + skew + next(jitters) for skew in skews[:metrics]],
                array("d", [next(pool) for _ in range(metrics)]))

    with mock.patch.object(history_block, "MAX_REPORTS", 8):
        block = history_block.first_row(*report(0.0))
        for kind in held:
            grown = history_block.appended_row(block, width, *report(kind),
                                               window)
            if grown is None:
                break
            block = grown
        times, rows = zip(*map(report, added), strict=True)
        # As a history holds them: one float for a report of one time.
        held_times = [history_block.held_times(when, metrics)
                      for when in times]
        got = history_block.appended_rows(block, width, held_times, rows,
                                          window)
        want = _one_by_one(block, width, times, rows, window)
    if got is not None:
        assert want is not None
        assert got.tobytes() == want.tobytes()


def _two_metrics() -> tuple[tuple[str, ...], history.MetricHistory]:
    """Two metrics' names and a history of their first report."""
    names = NAMES[:2]
    return names, history.EMPTY.appended_report(names, [T0, T0],
                                                [1.0, 2.0], 3600.0)


def test_values_not_held_as_doubles_are_added_at_once():
    names, held = _two_metrics()
    for values in ([3.0, 4.0], array("f", [3.0, 4.0]),
                   array("q", [3, 4])):
        later = held.appended_report(names, [T0 + 60.0] * 2, values, 3600.0)
        assert later._deferred is None
        assert later.statistic("memory.used", "max", 3600.0) == 4.0


def test_a_report_given_one_time_for_all_its_metrics_is_held_back():
    names, held = _two_metrics()
    later = held.appended_report(names, T0 + 60.0, array("d", [3.0, 4.0]),
                                 3600.0)
    assert later._deferred is not None
    assert later.statistic("memory.used", "max", 3600.0) == 4.0


def test_reports_of_one_time_each_pass_on_rows_of_several():
    # A report stamped per plugin is held; later ones of one time each
    # still go in one pass, through the per-metric checks.
    block = history_block.first_row([T0, T0 + 0.5], [1.0, 2.0])
    times = [T0 + 60.0 * step for step in range(1, 6)]
    rows = [array("d", [float(step), 2.0 * step]) for step in range(1, 6)]
    got = history_block.appended_rows(block, 8, times, rows, 3600.0)
    want = _one_by_one(block, 8, [[when] * 2 for when in times], rows,
                       3600.0)
    assert got is not None
    assert got.tobytes() == want.tobytes()


def test_a_report_not_of_the_layouts_length_is_not_held_back():
    names, held = _two_metrics()
    with pytest.raises(ValueError):
        held.appended_report(names, [T0 + 60.0], array("d", [3.0]), 3600.0)


def test_times_held_as_one_keep_their_sign():
    assert history_block.held_times((T0, T0), 2) == T0
    assert history_block.held_times((0.0, -0.0), 2) == (0.0, -0.0)
    assert history_block.held_times([T0, T0 + 1.0], 2) == (T0, T0 + 1.0)
    # A report's one time for all its metrics.
    assert history_block.held_times(T0, 2) == T0
    held = history_block.held_times(-0.0, 2)
    assert held == (-0.0, -0.0)
    assert [math.copysign(1.0, when) for when in held] == [-1.0, -1.0]
