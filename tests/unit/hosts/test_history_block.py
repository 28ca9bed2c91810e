"""A history appended report by report as columns (``appended_report``,
held as blocks where it can) is indistinguishable from one appended
through ``appended_readings``, to the last bit of every statistic."""

from unittest import mock

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler.hosts import history
from scheduler.hosts import history_block

NAMES = ("cpu.percent", "memory.used", "memory.free", "load")
WINDOWS = (0.0, 1e-9, 0.5, 59.0, 60.0, 90.0, 180.0, 3600.0,
           float("inf"))
STATS = ("last", "max", "mean", "stddev", "p95")
T0 = 1.8e9

# Mostly distinct names; a name twice (its last reading counts), or none.
_layouts = st.one_of(
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True),
    st.lists(st.sampled_from(NAMES), max_size=4)).map(tuple)
_values = st.one_of(
    st.floats(width=64),
    st.sampled_from([0.0, -0.0, 1e300, 0.1, 7.0]),
    st.integers(min_value=-2**60, max_value=2**60))
# The step from the previous report's time: mostly the usual minute;
# equal (not advancing), back, below the float spacing at 1.8e9.
_steps = st.sampled_from([60.0] * 30 + [0.0, -5.0, 1e-9, 0.5, 1.0, 30.0,
                                       59.0, 61.0, 600.0, 3600.0])
# Each metric's time off the report's, by plugin: often all alike.
_skews = st.sampled_from([0.0, 0.0, 0.25, -1.0, 29.0, -60.0])
_rarely = st.integers(0, 7).map(lambda n: n == 0)
_reports = st.fixed_dictionaries({
    "new_layout": _rarely,
    "layout": _layouts,
    "step": _steps,
    # Now and then a report's times off their plugins' usual skews.
    "jitter": st.one_of(*[st.none()] * 7, st.lists(
        st.sampled_from([0.0, 0.5, -0.5, 60.0, -60.0, float("nan")]),
        min_size=4, max_size=4)),
    "values": st.lists(_values, min_size=4, max_size=4),
    "new_window": _rarely,
    "window": st.sampled_from(WINDOWS),
    # Appended to an older version (two refreshes from one), or
    # through appended_readings (a caller of the per-metric path).
    "back": st.sampled_from([0] * 6 + [1, 2]),
    "via_readings": _rarely,
})


def _bits(found):
    """A statistic's result to compare to the last bit (NaN included)."""
    if found is None:
        return None
    if isinstance(found, tuple):
        return tuple(map(_bits, found))
    return float(found).hex()


def _records(held: history.MetricHistory, name: str) -> list[bytes]:
    """Every column of the records of ``name``, running sums included."""
    records, offset, stride = held._located(name)
    return [records[offset + column::stride].tobytes()
            for column in range(history_block.RECORD)]


def assert_indistinguishable(got: history.MetricHistory,
                             want: history.MetricHistory) -> None:
    assert got.names() == want.names()
    assert len(got) == len(want)
    assert hash(got) == hash(want)
    assert got.nbytes() == want.nbytes()
    # NaN values make a history unequal even to itself.
    assert (got == want) is (want == want) is (got == got)
    for name in want.names() + ["absent"]:
        assert got.reports(name) == want.reports(name)
        mine, theirs = got.series(name), want.series(name)
        if theirs is None:
            assert mine is None
            continue
        assert [c.tobytes() for c in mine] == [c.tobytes() for c in theirs]
        assert _records(got, name) == _records(want, name)
        for window in WINDOWS:
            for stat in STATS:
                assert _bits(got.statistic(name, stat, window)) == \
                    _bits(want.statistic(name, stat, window))
            assert _bits(got.moments(name, window)) == \
                _bits(want.moments(name, window))


def replay(skews: list[float], reports: list[dict]) -> tuple[list, list]:
    """Both paths' versions after each of ``reports``, their metrics'
    times ``skews`` off the report's (by position)."""
    got, want = [history.EMPTY], [history.EMPTY]
    interned: dict[tuple[str, ...], tuple[str, ...]] = {}
    layout, when, window = NAMES[:3], T0, 3600.0
    for report in reports:
        if report["new_layout"]:
            layout = report["layout"]
        # The host cache passes one tuple object per layout; a caller
        # may pass an equal one.
        names = interned.setdefault(layout, layout)
        if report["back"] % 2:
            names = tuple(name for name in names)
        when += report["step"]
        if report["new_window"]:
            window = report["window"]
        jitter = report["jitter"] or (0.0,) * 4
        times = [when + skew + off for skew, off
                 in zip(skews[:len(names)], jitter[:len(names)], strict=True)]
        values = report["values"][:len(names)]
        base = max(len(got) - 1 - report["back"], 0)
        readings = dict(zip(names, zip(times, values, strict=True),
                            strict=True))
        if report["via_readings"]:
            got.append(got[base].appended_readings(readings, window))
        else:
            got.append(got[base].appended_report(names, times, values,
                                                 window))
        want.append(want[base].appended_readings(readings, window))
    return got, want


@settings(max_examples=300, deadline=None)
@given(st.lists(_skews, min_size=4, max_size=4),
       st.lists(_reports, max_size=40))
def test_appended_report_is_appended_readings_to_the_bit(skews, reports):
    # A small cap, for runs past it within a few reports.
    with mock.patch.object(history, "MAX_REPORTS", 5), \
            mock.patch.object(history_block, "MAX_REPORTS", 5):
        got, want = replay(skews, reports)
    for mine, theirs in zip(got, want, strict=True):
        assert_indistinguishable(mine, theirs)


@pytest.mark.parametrize("skews", [(0.0, 0.0, 0.0), (0.0, 0.5, -20.0)])
def test_a_long_run_past_the_cap_is_held_as_appended_readings_holds_it(
        skews):
    names = NAMES[:3]
    got = want = history.EMPTY
    for second in range(history.MAX_REPORTS + 30):
        times = [T0 + second + skew for skew in skews]
        values = [second * 0.1, -second, 1.0 / (second + 1)]
        got = got.appended_report(names, times, values, 86400.0)
        want = want.appended_readings(
            dict(zip(names, zip(times, values, strict=True), strict=True)),
            86400.0)
    assert got.reports("load") == 0
    assert got.reports("memory.free") == history.MAX_REPORTS
    assert_indistinguishable(got, want)


def test_a_report_of_the_same_layout_is_one_block():
    names = NAMES[:3]
    held = history.EMPTY
    for minute in range(70):
        when = T0 + 60.0 * minute
        held = held.appended_report(names, [when, when + 1.0, when - 2.0],
                                    [1.0, 2.0, 3.0], 3600.0)
    assert held._layout.names is names and held._series is None
    assert len(held._block) == 60 * len(names) * history_block.RECORD


def test_a_metric_not_advancing_is_held_per_metric_until_they_agree():
    names = NAMES[:2]
    held = history.EMPTY
    for minute in range(4):
        when = T0 + 60.0 * minute
        # The second metric's time stays at the first report's.
        held = held.appended_report(names, [when, T0], [1.0, 2.0], 120.0)
    assert held._layout is None
    assert held.reports("cpu.percent") == 2
    assert held.reports("memory.used") == 1
    held = held.appended_report(names, [T0 + 240.0, T0 + 240.0],
                                [1.0, 2.0], 60.0)
    assert held._layout is not None and held.reports("memory.used") == 1


def test_reports_of_mismatched_columns_are_refused():
    with pytest.raises(ValueError):
        history.EMPTY.appended_report(NAMES[:2], [T0], [1.0, 2.0], 60.0)
    held = history.EMPTY.appended_report(NAMES[:2], [T0, T0], [1.0, 2.0],
                                         60.0)
    with pytest.raises(ValueError):
        held.appended_report(NAMES[:2], [T0 + 60.0] * 2, [1.0], 60.0)
