"""A node's report history and the windowed statistics computed from it."""

import datetime
import statistics

import numpy as np
import pytest

from scheduler.conf import metric_stat
from scheduler.hosts import history
from scheduler.hosts.state import Metric
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import fresh_metric
from tests.fakes import host_with_cpu_history

T0 = datetime.datetime(2026, 1, 5, 12, 0)
MINUTE = datetime.timedelta(minutes=1)


def reports(values: list[float], name: str = "cpu.percent",
            window: float = 3600.0) -> history.MetricHistory:
    """The history of one report a minute with ``values``."""
    held = history.EMPTY
    for index, value in enumerate(values):
        held = held.appended({name: Metric(value, T0 + index * MINUTE)},
                             window)
    return held


def test_reports_are_kept_for_the_window_only():
    held = reports([float(v) for v in range(90)], window=1800.0)
    epochs, values = held.series("cpu.percent")
    # 30 minutes of one-a-minute reports, the newest last.
    assert len(values) == 30
    assert values[-1] == 89.0 and values[0] == 60.0
    assert not values.flags.writeable


def test_a_report_not_newer_than_the_last_is_not_added_twice():
    held = reports([10.0, 20.0])
    again = held.appended({"cpu.percent": Metric(99.0, T0 + MINUTE)},
                          3600.0)
    assert again.reports("cpu.percent") == 2
    assert again == held


def test_an_older_history_is_not_changed_by_appending():
    held = reports([10.0])
    held.appended({"cpu.percent": Metric(20.0, T0 + MINUTE)}, 3600.0)
    assert held.reports("cpu.percent") == 1


def test_reports_are_bounded_whatever_the_window():
    held = history.EMPTY
    for second in range(history.MAX_REPORTS + 50):
        held = held.appended({"cpu.percent": Metric(
            1.0, T0 + datetime.timedelta(seconds=second))}, 86400.0)
    assert held.reports("cpu.percent") == history.MAX_REPORTS
    assert held.nbytes() == 32 * history.MAX_REPORTS


def test_statistics_over_the_window():
    held = reports([10.0, 20.0, 30.0, 40.0])
    assert held.statistic("cpu.percent", "mean", 3600.0) == 25.0
    assert held.statistic("cpu.percent", "max", 3600.0) == 40.0
    # The last two reports: newer than 2 minutes before the newest.
    assert held.statistic("cpu.percent", "mean", 120.0) == 35.0
    assert held.statistic("cpu.percent", "stddev", 3600.0) == \
        pytest.approx(np.std([10, 20, 30, 40]))
    assert held.statistic("cpu.percent", "p95", 3600.0) == \
        pytest.approx(np.percentile([10, 20, 30, 40], 95))
    assert held.statistic("memory.free", "mean", 3600.0) is None


def test_a_window_longer_than_held_uses_what_is_held():
    held = reports([10.0, 30.0], window=60.0)
    assert held.reports("cpu.percent") == 1
    assert held.statistic("cpu.percent", "mean", 7200.0) == 30.0


def test_host_statistic_through_metric_since():
    host = host_with_cpu_history([10.0, 20.0, 60.0])
    assert host.metric_since("cpu.percent:mean:1h", None) == 30.0
    assert host.metric_since("cpu.percent:max:2m", None) == 60.0
    assert host.metric_since("cpu.percent:last", None) == 60.0
    assert host.metric_since("cpu.percent", None) == 60.0
    assert host.metric_since("memory.free:mean:1h", None) is None


def test_pending_claims_count_in_statistics_as_in_last():
    # 2 of 8 vCPUs claimed since the last report: +25 percent.
    host = host_with_cpu_history([10.0, 20.0, 30.0], vcpus_pending=2)
    assert host.metric_since("cpu.percent", None) == 55.0
    assert host.metric_since("cpu.percent:mean:1h", None) == 45.0
    # A constant does not move a spread.
    assert host.metric_since("cpu.percent:stddev:1h", None) == \
        pytest.approx(np.std([10, 20, 30]))


def test_a_stale_metric_has_no_statistic():
    host = host_with_cpu_history([10.0, 20.0], age=600.0)
    cutoff = datetime.datetime.now() - datetime.timedelta(seconds=300)
    assert host.metric_since("cpu.percent:mean:1h", cutoff) is None


def test_a_bad_statistic_name_is_unavailable_not_a_crash():
    host = host_with_cpu_history([10.0])
    assert host.metric_since("cpu.percent:median:1h", None) is None
    assert host.metric_since("cpu.percent:mean:forever", None) is None


def test_the_column_of_a_statistic_is_cached_per_table():
    hosts = [host_with_cpu_history([10.0, 30.0]),
             host_with_cpu_history([50.0, 50.0])]
    table = HostTable(hosts)
    column = fresh_metric(table, "cpu.percent:mean:1h", None)
    assert column.tolist() == [20.0, 50.0]
    assert fresh_metric(table, "cpu.percent:mean:1h", None) is column
    cutoff = datetime.datetime(1970, 1, 1)
    assert fresh_metric(table, "cpu.percent:mean:1h",
                        cutoff).tolist() == [20.0, 50.0]


@pytest.mark.parametrize("name, stat, window", [
    ("cpu.percent", "last", 0.0),
    ("cpu.percent:last", "last", 0.0),
    ("cpu.percent:p95:1h", "p95", 3600.0),
    ("cpu.percent:mean:30m", "mean", 1800.0),
    ("cpu.percent:stddev:90s", "stddev", 90.0),
    ("cpu.percent:max:120", "max", 120.0),
])
def test_parse(name, stat, window):
    assert metric_stat.parse(name) == ("cpu.percent", stat, window)


@pytest.mark.parametrize("name, named", [
    ("cpu.percent:median:1h", "median"),
    ("cpu.percent:mean:1d", "1d"),
    ("cpu.percent:mean:0s", "0s"),
    ("cpu.percent:mean", "cpu.percent:mean"),
    ("cpu.percent:mean:1h:2", "cpu.percent:mean:1h:2"),
    ("CPU:mean:1h", "CPU"),
])
def test_parse_names_what_is_wrong(name, named):
    with pytest.raises(ValueError, match=named):
        metric_stat.parse(name)


@pytest.mark.parametrize("seed", range(5))
def test_statistics_agree_with_numpy(seed):
    rng = np.random.default_rng(seed)
    values = rng.uniform(0, 100, size=int(rng.integers(1, 60))).tolist()
    held = reports(values)
    for stat, reference in (("mean", np.mean), ("max", np.max),
                            ("stddev", np.std),
                            ("p95", lambda v: np.percentile(v, 95))):
        assert held.statistic("cpu.percent", stat, 3600.0) == \
            pytest.approx(float(reference(values)))


NOW = datetime.datetime(2026, 1, 5, 12, 0)


def test_mean_and_stddev_by_running_sums_match_the_reports():
    held = history.EMPTY
    values = [3.0, 50.0, 7.5, 99.0, 0.0, 42.0, 42.0, 18.25]
    for minute, value in enumerate(values):
        held = held.appended({"m": Metric(
            value, NOW + datetime.timedelta(minutes=minute))}, 300.0)
    # Held: the reports newer than 300 s before the newest (five); a
    # 240 s window: the four newer than 240 s before it.
    window = values[-4:]
    assert held.reports("m") == 5
    assert held.statistic("m", "mean", 240.0) == pytest.approx(
        statistics.fmean(window))
    assert held.statistic("m", "stddev", 240.0) == pytest.approx(
        statistics.pstdev(window))
    assert held.statistic("m", "mean", 3600.0) == pytest.approx(
        statistics.fmean(values[-5:]))


def test_moments_are_the_mean_and_stddev_statistics_give():
    held = history.EMPTY
    for minute, value in enumerate([10.0, 70.0, 40.0, 95.0, 5.0]):
        held = held.appended({"m": Metric(value, T0 + minute * MINUTE)},
                             3600.0)
    for window in (60.0, 180.0, 3600.0):
        # The same arithmetic: equal to the last bit.
        assert held.moments("m", window) == (
            held.statistic("m", "mean", window),
            held.statistic("m", "stddev", window))
    assert held.moments("absent", 3600.0) is None


def test_a_window_shorter_than_the_float_spacing_holds_the_newest():
    held = history.EMPTY
    for minute, value in enumerate([10.0, 30.0]):
        held = held.appended({"m": Metric(value, T0 + minute * MINUTE)},
                             3600.0)
    assert held.statistic("m", "mean", 1e-9) == 30.0
    assert held.moments("m", 1e-9) == (30.0, 0.0)


def test_histories_of_the_same_reports_are_equal_wherever_they_began():
    # The running sums of a history that dropped older reports differ
    # from those of one that never held them; the reports do not.
    longer = reports([5.0, 10.0, 20.0], window=90.0)
    shorter = history.EMPTY
    for minute, value in ((1, 10.0), (2, 20.0)):
        shorter = shorter.appended(
            {"cpu.percent": Metric(value, T0 + minute * MINUTE)}, 90.0)
    assert longer.series("cpu.percent")[1].tolist() == [10.0, 20.0]
    assert longer == shorter
    assert hash(longer) == hash(shorter)
    assert longer != reports([5.0, 10.0, 21.0], window=90.0)
    assert longer.statistic("cpu.percent", "mean", 90.0) == 15.0


def test_versions_appended_to_the_same_one_each_hold_their_own_reports():
    # Two refreshes (a background full load and a request) may append
    # to the same version: neither sees the other's report.
    held = reports([10.0, 20.0])
    later = T0 + 2 * MINUTE
    first = held.appended({"cpu.percent": Metric(30.0, later)}, 3600.0)
    second = held.appended({"cpu.percent": Metric(90.0, later)}, 3600.0)
    third = first.appended({"cpu.percent": Metric(40.0, later + MINUTE)},
                           3600.0)
    assert held.series("cpu.percent")[1].tolist() == [10.0, 20.0]
    assert first.series("cpu.percent")[1].tolist() == [10.0, 20.0, 30.0]
    assert second.series("cpu.percent")[1].tolist() == [10.0, 20.0, 90.0]
    assert third.series("cpu.percent")[1].tolist() == [
        10.0, 20.0, 30.0, 40.0]
    assert second.statistic("cpu.percent", "mean", 3600.0) == 40.0
    assert first.statistic("cpu.percent", "max", 3600.0) == 30.0


def test_a_sliding_window_keeps_its_statistics():
    # Many windows' worth of reports, each dropping the oldest.
    values = [float((minute * 37) % 101) for minute in range(200)]
    held = reports(values, window=600.0)
    kept = values[-10:]
    assert held.series("cpu.percent")[1].tolist() == kept
    assert held.statistic("cpu.percent", "mean", 600.0) == pytest.approx(
        statistics.fmean(kept))
    assert held.statistic("cpu.percent", "stddev", 600.0) == \
        pytest.approx(statistics.pstdev(kept))
    assert held.statistic("cpu.percent", "p95", 300.0) == pytest.approx(
        np.percentile(kept[-5:], 95))
    assert held.nbytes() == 32 * len(kept)


def test_a_metric_left_out_of_a_report_is_dropped_and_others_kept():
    held = history.EMPTY
    held = held.appended({"a": Metric(1.0, T0), "b": Metric(2.0, T0)},
                         3600.0)
    held = held.appended({"b": Metric(3.0, T0 + MINUTE)}, 3600.0)
    assert held.names() == ["b"]
    assert held.series("b")[1].tolist() == [2.0, 3.0]
    assert held.series("a") is None


def test_appended_report_is_appended_readings_of_its_columns():
    names = ("cpu.percent", "memory.used")
    held = history.EMPTY
    want = history.EMPTY
    for minute in range(5):
        when = 1.8e9 + 60.0 * minute
        times, values = [when, when - 1.0], [10.0 + minute, 2.0 * minute]
        held = held.appended_report(names, times, values, 180.0)
        want = want.appended_readings(
            {"cpu.percent": (times[0], values[0]),
             "memory.used": (times[1], values[1])}, 180.0)
    assert held == want
    assert held.reports("cpu.percent") == 3  # newer than 240 - 180 s
    assert held.statistic("memory.used", "mean", 3600.0) == \
        want.statistic("memory.used", "mean", 3600.0)
