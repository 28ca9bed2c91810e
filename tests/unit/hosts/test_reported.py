"""A report's metrics as columns, read as the dict of Metric they were."""

import datetime
import pickle
from array import array

import pytest

from scheduler.hosts import reported
from scheduler.hosts.state import HostState
from scheduler.hosts.state import Metric

T0 = datetime.datetime(2026, 1, 5, 12, 0)
T1 = datetime.datetime(2026, 1, 5, 12, 1)


def _view(values, stamps=T0, sources=("libvirt", None)):
    names = ("cpu.percent", "memory.used")[:len(values)]
    layout = reported.layout(names, sources[:len(values)])
    floats = array("d", values)
    return reported.ReportedMetrics(
        layout, floats if floats.tolist() == list(values) else values,
        reported.kinds(values), stamps)


def _dict(values, stamps=(T0, T0), sources=("libvirt", "")):
    return {name: Metric(value, stamp, source) for name, value, stamp, source
            in zip(("cpu.percent", "memory.used"), values, stamps, sources,
                               strict=False)}


@pytest.mark.parametrize("values, stamps, want", [
    ((12.5, 2.0), T0, _dict([12.5, 2.0])),
    ((12.5, 2**40), (T0, T1), _dict([12.5, 2**40], (T0, T1))),
    # Past the doubles' exact ints: kept as reported.
    ((-0.0, 2**53 + 1), T0, _dict([-0.0, 2**53 + 1])),
])
def test_a_view_reads_as_the_dict(values, stamps, want):
    view = _view(values, stamps)
    assert view == want and want == view and dict(view) == want
    assert list(view) == list(want) and list(reversed(view)) == \
        list(reversed(want))
    assert view.keys() == want.keys() and list(view.items()) == \
        list(want.items())
    assert list(view.values()) == list(want.values())
    assert [type(m.value) for m in view.values()] == \
        [type(m.value) for m in want.values()]
    assert view["memory.used"] == want["memory.used"]
    assert view.get("disk.used", 0) == 0 and "disk.used" not in view
    with pytest.raises(KeyError):
        view["disk.used"]
    assert repr(view) == repr(want) and {**view} == want
    assert pickle.loads(pickle.dumps(view)) == want


def test_views_compare_by_their_metrics():
    assert _view((1.0, 2.0)) == _view((1, 2))
    assert _view((1.0, 2.0)) != _view((1.0, 3.0))
    assert _view((1.0, 2.0)) != _view((1.0, 2.0), (T0, T1))
    assert _view((1.0,)) != _dict([1.0, 2.0])
    assert _view((1.0,)) != [("cpu.percent", 1.0)]
    # Host states holding one or the other are equal too.
    assert HostState(1, "u", "h", "n", metrics=_view((1.0, 2))) == \
        HostState(1, "u", "h", "n", metrics=_dict([1.0, 2]))


def test_a_view_is_read_only():
    view = _view((1.0, 2.0))
    with pytest.raises(TypeError):
        view["cpu.percent"] = Metric(3.0, T0)  # type: ignore[index]
    with pytest.raises(TypeError):
        hash(view)


@pytest.mark.parametrize("names", [("cpu.percent", ""), ("a", "b", "a")])
def test_a_layout_of_an_empty_or_repeated_name_is_refused(names):
    assert reported.layout(names, (None,) * len(names)) is None


def test_a_layout_is_one_object_per_names_and_sources():
    names = ("cpu.percent", "memory.used")
    first = reported.layout(names, ("libvirt", None))
    # Another tuple of the same names (a report decoded later).
    again = names[:1] + names[1:]
    assert again is not names
    assert reported.layout(again, ("libvirt", None)) is first
    assert first.sources == ("libvirt", "")
    assert reported.layout(names, ("libvirt", "file")) is not first


@pytest.mark.parametrize("texts, want", [
    ((), ()),
    (("2026-01-05T12:00:00Z",) * 3, T0),
    (("2026-01-05T12:00:00Z", "2026-01-05T12:01:00+00:00"), (T0, T1)),
    (("2026-01-05T12:00:00Z", "yesterday"), None),
    (("yesterday",) * 2, None),
])
def test_a_reports_stamps_are_one_datetime_when_they_agree(texts, want):
    assert reported.stamps(texts) == want


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_view_pickles_with_every_protocol(protocol):
    view = _view((12.5, 2**53 + 1), (T0, T1))
    again = pickle.loads(pickle.dumps(view, protocol))
    assert again == view and list(again) == list(view)
    assert type(again["memory.used"].value) is int


def test_a_view_copies_and_merges_as_the_dict_did():
    view, want = _view((12.5, 2.0)), _dict([12.5, 2.0])
    copied = view.copy()
    assert type(copied) is dict and copied == want
    extra = {"disk.free": Metric(1.0, T1)}
    assert view | extra == want | extra
    assert extra | view == extra | want
    override = {"cpu.percent": Metric(99.0, T1)}
    assert (view | override)["cpu.percent"].value == 99.0
    assert (override | view)["cpu.percent"].value == 12.5
