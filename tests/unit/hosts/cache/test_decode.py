"""Decoding a report's metrics: msgspec's path for well-formed reports
gives what the entry-by-entry path gives."""

import datetime
import json
import sys
from array import array

import pytest
from hypothesis import example
from hypothesis import given
from hypothesis import strategies as st

from scheduler.db.host_queries import NodeRow
from scheduler.hosts import history as history_mod
from scheduler.hosts import instance_metrics
from scheduler.hosts import reported
from scheduler.hosts.cache import decode
from scheduler.hosts.cache import instance_entries
from scheduler.hosts.cache import report_columns

STAMP = "2026-01-05T12:00:00.5Z"

# Ints of 64 bits at most: past them orjson (the entry-by-entry path)
# reads a float where msgspec keeps the int, as on main.
# Those past 2**53 may have no exact double.
_ints = st.one_of(st.integers(min_value=-2**63, max_value=2**64 - 1),
                  st.sampled_from([2**53 + 1, -2**63 + 1, 2**64 - 1]))
_values = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False), _ints,
    st.sampled_from([10**400, -10**400, True, None, "7", [1]]))
_entries = st.fixed_dictionaries(
    {"name": st.sampled_from(["cpu.percent", "memory.free", ""]),
     "value": _values},
    optional={"timestamp": st.sampled_from([STAMP, "yesterday", 5,
                                            "2026-01-05T13:00:00+01:00"]),
              "source": st.sampled_from(["libvirt", None, 3]),
              "instance": st.sampled_from(["u1", None])})


def _as_reported(metrics) -> list[tuple]:
    """``metrics`` read through every accessor a dict has, the values'
    types included: what a reader of host.metrics could tell apart."""
    names = list(metrics)
    got = [(name, type(metric.value), metric.value, metric.timestamp,
            metric.source) for name, metric in metrics.items()]
    assert names == [name for name, *_ in got] == list(metrics.keys())
    assert list(metrics.values()) == [metrics[name] for name in names] == \
        [metrics.get(name) for name in names]
    assert len(metrics) == len(names) and all(n in metrics for n in names)
    assert "no.such.metric" not in metrics
    assert metrics.get("no.such.metric") is None
    assert dict(metrics) == metrics and metrics == dict(metrics)
    return got


@given(st.lists(_entries, max_size=6), st.lists(_entries, max_size=6))
def test_fast_path_agrees_with_the_entry_by_entry_path(first, second):
    """Two reports of a node: what the columns give (metrics, history)
    is what the entry-by-entry decoding of the same entries gives."""
    want_history = history_mod.EMPTY
    previous = None
    for entries in (first, second):
        got = decode.decode(_row(entries), previous, 3600.0)
        want, bad = decode.decode_metrics(json.dumps(entries), [])
        assert _as_reported(got.metrics) == _as_reported(want)
        assert got.bad_metrics == bad
        want_history = want_history.appended(want, 3600.0)
        assert got.history == want_history
        # repr: a sum past a float's range is NaN, not equal to itself.
        assert repr([got.history.moments(name, 3600.0)
                     for name in got.history.names()]) == \
            repr([want_history.moments(name, 3600.0)
                  for name in want_history.names()])
        previous = got


@given(st.lists(st.fixed_dictionaries(
    {"name": st.sampled_from(["cpu.percent", "memory.free", "disk.used"]),
     "value": st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                        _ints),
     "timestamp": st.sampled_from([STAMP, "2026-01-05T12:00:01Z"]),
     "source": st.sampled_from(["libvirt", "file"])}), max_size=4))
def test_regular_reports_take_the_columns(entries):
    """The property above, for reports that are mostly well formed."""
    got = _well_formed(json.dumps(entries))
    names = [entry["name"] for entry in entries]
    if len(set(names)) < len(names):
        assert got is None
        return
    assert type(got) is reported.ReportedMetrics
    want, _ = decode.decode_metrics(json.dumps(entries), [])
    assert _as_reported(got) == _as_reported(want)


def test_a_well_formed_report_takes_the_fast_path():
    text = json.dumps([
        {"name": "cpu.percent", "value": 12.5, "source": "libvirt",
         "timestamp": STAMP},
        {"name": "memory.total", "value": 2**40, "timestamp": STAMP},
        {"name": "instance.cpu.percent", "instance": "u1", "value": 50.0,
         "timestamp": STAMP}])
    metrics = _well_formed(text)
    assert set(metrics) == {"cpu.percent", "memory.total"}
    assert metrics["cpu.percent"].value == 12.5
    assert metrics["cpu.percent"].source == "libvirt"
    assert metrics["memory.total"].value == 2**40
    assert metrics["memory.total"].source == ""
    assert metrics["cpu.percent"].timestamp == datetime.datetime(
        2026, 1, 5, 12, 0, 0, 500000)
    assert instance_entries.instance_entries(text) == [
        {"name": "instance.cpu.percent", "instance": "u1", "value": 50.0,
         "timestamp": STAMP}]


def test_an_int_past_a_floats_range_is_a_bad_metric_not_a_crash():
    text = (f'[{{"name": "disk.bytes", "value": {10**400}, '
            f'"timestamp": "{STAMP}"}}]')
    assert _well_formed(text) is None
    problems: list[str] = []
    metrics, bad = decode.decode_metrics(text, problems)
    assert metrics == {} and bad == {"disk.bytes"}
    assert "is not a finite number" in problems[0]


def _well_formed(text: str) -> reported.ReportedMetrics | None:
    found = report_columns.columns(text)
    return None if found is None else found[0]


def _row(entries: list[dict]) -> NodeRow:
    fields = dict.fromkeys(NodeRow._fields)
    fields.update(id=1, uuid="u", host="h", hypervisor_hostname="h",
                  vcpus=16, memory_mb=1024, local_gb=10, cpu_info="{}",
                  networks="[]", metrics=json.dumps(entries))
    return NodeRow(**fields)


def _series(history, uuids):
    return {uuid: tuple(map(tuple, history.series(uuid)))
            for uuid in uuids if history.series(uuid) is not None}


def _mostly(usual: st.SearchStrategy, rare: list) -> st.SearchStrategy:
    """``usual`` nine times in ten, else one of ``rare``: irregular
    entries rare enough that most reports take the fast path."""
    return st.integers(0, 9).flatmap(
        lambda draw: st.sampled_from(rare) if draw == 0 else usual)


_instance_entries = st.fixed_dictionaries(
    {"name": _mostly(st.sampled_from(["instance.cpu.percent",
                                      "instance.memory.used"]),
                     ["cpu.percent"]),
     "instance": _mostly(st.sampled_from(["u1", "u2", "u3"]), ["", 7]),
     "value": _mostly(st.floats(allow_nan=False, allow_infinity=False,
                                min_value=-1e6, max_value=1e6),
                      [10**400, "7"]),
     "timestamp": _mostly(st.sampled_from([STAMP, "2026-01-05T12:05:00Z"]),
                          ["yesterday"])})


@given(st.lists(_instance_entries, max_size=5),
       st.lists(_instance_entries, max_size=5))
def test_instance_history_read_straight_agrees_with_decoded_entries(
        first, second):
    """The report path reads instance.cpu.percent entries without
    decoding every instance entry: the history is the one the decoded
    entries give (what is malformed left out, the first of twins kept)."""
    host = {"name": "cpu.percent", "value": 1.0, "timestamp": STAMP}
    previous = decode.decode(_row([host] + first), None, 0.0, 3600.0)
    got = decode.decode(_row([host] + second), previous, 0.0, 3600.0)
    want = history_mod.EMPTY
    for entries in (first, second):
        decoded = instance_metrics.decode(entries, [])
        want = want.appended(
            {uuid: metrics["instance.cpu.percent"]
             for uuid, metrics in decoded.items()
             if "instance.cpu.percent" in metrics}, 3600.0)
    uuids = ("u1", "u2", "u3", "")
    assert _series(got.instance_history, uuids) == _series(want, uuids)


@pytest.mark.parametrize("irregular, problem", [
    ({"instance": "u2", "value": 20.0, "timestamp": "yesterday"},
     "is not an ISO-8601 date"),
    ({"instance": "u2", "value": 10**400, "timestamp": STAMP},
     "is not a finite number"),
    ({"instance": 7, "value": 20.0, "timestamp": STAMP},
     "names no instance"),
    ({"instance": "u2", "name": "memory.used", "value": 1.0,
      "timestamp": STAMP}, "does not begin with 'instance.'"),
])
def test_an_irregular_instance_entry_is_logged_and_left_out(
        caplog, irregular, problem):
    entries = [{"name": "instance.cpu.percent", "instance": "u1",
                "value": 30.0, "timestamp": STAMP},
               {"name": "instance.cpu.percent", **irregular}]
    got = decode.decode(_row(entries), None, 0.0, 3600.0)
    assert got.instance_history.statistic("u1", "mean", 3600.0) == 30.0
    assert got.instance_history.series("u2") is None
    assert "reports malformed instance entries" in caplog.text
    assert problem in caplog.text


def test_a_twice_reported_instance_keeps_its_first_reading(caplog):
    entries = [{"name": "instance.cpu.percent", "instance": "u1",
                "value": value, "timestamp": STAMP} for value in (30.0, 90.0)]
    got = decode.decode(_row(entries), None, 0.0, 3600.0)
    assert got.instance_history.statistic("u1", "mean", 3600.0) == 30.0
    assert "u1: instance.cpu.percent is reported twice" in caplog.text


@pytest.mark.parametrize("key", ['"instance"', '"\\u0069nstance"'])
def test_instance_entries_are_read_from_a_report_holding_some(key):
    # The text is kept for them only when it may hold some: an escaped
    # key is one too.
    text = ('[{"name": "cpu.percent", "value": 1.0, "timestamp": '
            f'"{STAMP}"}}, {{"name": "instance.memory.used", {key}: "u1", '
            f'"value": 5.0, "timestamp": "{STAMP}"}}]')
    row = _row([])._replace(metrics=text)
    got = decode.decode(row)
    assert got.metrics["cpu.percent"].value == 1.0
    assert got.instance_metrics["u1"]["instance.memory.used"].value == 5.0
    assert got.metrics_key == decode.metrics_key(text)


@pytest.mark.parametrize("source", ["libvirt", "instance", "\u00e9t\u00e9"])
def test_a_report_without_instance_entries_has_none(source):
    # "instance" or escapes in a value are no instance entry either: the
    # parse tells, and the text is not kept for them.
    got = decode.decode(_row([{"name": "cpu.percent", "value": 1.0,
                               "source": source, "timestamp": STAMP}]))
    assert got.metrics["cpu.percent"].source == source
    # One shared empty mapping, not an object per report.
    assert got.instance_metrics is decode._NO_INSTANCES


def test_names_invented_by_a_node_do_not_grow_the_layouts(monkeypatch):
    monkeypatch.setattr(reported, "_LAYOUTS_KEPT", 8)
    reported._LAYOUTS.clear()
    for report in range(20):
        _well_formed(json.dumps([
            {"name": f"made.up.{report}", "value": 1.0,
             "timestamp": STAMP}]))
        assert len(reported._LAYOUTS) <= 8
    first = _well_formed(json.dumps([
        {"name": "cpu.percent", "value": 1.0, "timestamp": STAMP}]))
    second = _well_formed(json.dumps([
        {"name": "cpu.percent", "value": 2.0, "timestamp": STAMP}]))
    # One layout (names, sources) for every host that reports the same.
    assert first.layout is second.layout
    assert first["cpu.percent"].value == 1.0
    assert second["cpu.percent"].value == 2.0


def test_a_report_of_one_timestamp_keeps_one_datetime():
    metrics = _well_formed(json.dumps([
        {"name": name, "value": value, "timestamp": STAMP}
        for name, value in (("cpu.percent", 1.0), ("memory.free", 1))]))
    assert metrics.stamps == datetime.datetime(2026, 1, 5, 12, 0, 0, 500000)
    # Kept as doubles, no object per value; read as reported.
    assert metrics.numbers == array("d", [1.0, 1.0])
    assert [type(metric.value) for metric in metrics.values()] == [float, int]


def test_an_int_rounding_to_the_largest_double_is_out_of_range():
    """It is past the doubles' range although float() rounds it into it:
    the report is decoded entry by entry, which reads it as a double."""
    def report(value: int) -> str:
        return ('[{"name": "a", "value": ' + str(value)
                + ', "timestamp": "2024-01-01T00:00:00Z"}]')

    assert _well_formed(
        report(int(sys.float_info.max) + 1)) is None
    largest = report(int(sys.float_info.max))
    assert _well_formed(largest)["a"].value == int(
        sys.float_info.max)


_regular = st.lists(st.fixed_dictionaries(
    {"name": st.sampled_from(["cpu.percent", "memory.free", "disk.used"]),
     "value": st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                        st.integers(min_value=-2**63, max_value=2**63)),
     "timestamp": st.sampled_from([STAMP, "2026-01-05T12:00:01Z"]),
     "source": st.sampled_from(["libvirt", "file"])},
    optional={"instance": st.just("u1")}),
    max_size=3, unique_by=lambda entry: entry["name"])
#: A node's description: mostly as it was (None), else a new one, well
#: formed or not.
_described = st.one_of(
    st.none(), st.none(), st.none(),
    st.tuples(st.sampled_from(['{}', '{"arch": "x86_64"}', '[1]']),
              st.sampled_from(['[]', '["net1"]', '{}'])))
_OWN = ('[{"name": "instance.cpu.percent", "instance": "u2", '
        f'"value": 5.0, "timestamp": "{STAMP}"}}]')
_own_instances = st.sampled_from([None, _OWN])
_REPORT = [{"name": "cpu.percent", "value": 5.0, "timestamp": STAMP,
            "source": "libvirt"}]


def _as_decoded(decoded: decode.Decoded) -> tuple:
    """Everything a reader of a decoding could tell apart."""
    return (decoded[:4], _as_reported(decoded.metrics),
            decoded.bad_metrics, dict(decoded.instance_metrics),
            decoded.cpu_info, decoded.networks, decoded.column_problems,
            decoded.history, decoded.instance_history,
            [(name, tuple(map(tuple, decoded.history.series(name))))
             for name in decoded.history.names()])


@example([(_REPORT, None, _OWN), (_REPORT, None, _OWN)])
@given(st.lists(st.tuples(_regular, _described, _own_instances),
                min_size=2, max_size=5))
def test_a_new_report_read_as_such_is_decoded_as_any_row(reports):
    """``reported`` gives what ``decode`` gives, or leaves the row to it:
    a report following one whose node's description (``cpu_info``,
    ``networks``) is as it was and decoded without a problem, and whose
    metrics list holds no instance entries."""
    previous = None
    described = ("{}", "[]")
    for entries, new_description, own in reports:
        described = new_description or described
        row = _row(entries)._replace(cpu_info=described[0],
                                     networks=described[1],
                                     instance_metrics=own)
        want = decode.decode(row, previous, 3600.0)
        columns = report_columns.columns(row.metrics)
        got = (previous is not None and columns is not None
               and decode.reported(row, previous, 3600.0, columns))
        takes = (previous is not None and columns is not None
                 and not columns[2] and not previous.column_problems
                 and described == (previous.cpu_info_text,
                                   previous.networks_text))
        assert bool(got) == takes
        if got:
            assert _as_decoded(got) == _as_decoded(want)
        previous = got or want


@pytest.mark.parametrize("changed", [{"networks": '["net1"]'},
                                     {"cpu_info": '{"arch": "x86_64"}'},
                                     {"networks": '["net1"]',
                                      "cpu_info": '{"arch": "x86_64"}'}])
def test_a_description_that_changed_is_decoded_anew(changed):
    """A row whose ``networks`` or ``cpu_info`` changed since its previous
    decoding (the other perhaps not) is described by its own texts, not
    by the previous decoding's."""
    row = _row(_REPORT)
    previous = decode.decode(row, None, 3600.0)
    moved = row._replace(**changed)
    got = decode.decode(moved, previous, 3600.0)
    alone = decode.decode(moved)
    assert (got.cpu_info, got.networks) == (alone.cpu_info, alone.networks)
    assert (got.cpu_info_text, got.networks_text) == (moved.cpu_info,
                                                      moved.networks)
    assert got.networks != previous.networks or "networks" not in changed
