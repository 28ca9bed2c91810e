"""Unit tests of scheduler.request.extra_specs: quantities, resources specs and
Nova's capability operators."""

import pytest

from scheduler import exception
from scheduler.request import extra_specs
from scheduler.request.extra_specs import InvalidExtraSpec
from scheduler.request.spec import RequestSpec

# --- parse_quantity ------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("0", 0.0),
    ("42", 42.0),
    ("-3", -3.0),
    ("+3", 3.0),
    ("1.5", 1.5),
    (".5", 0.5),
    ("5.", 5.0),
    ("1e3", 1000.0),
    ("1K", 1e3),
    ("1k", 1e3),
    ("85M", 85e6),
    ("85m", 85e6),
    ("1.5G", 1.5e9),
    ("1.5g", 1.5e9),
    ("2T", 2e12),
    ("2t", 2e12),
    ("1Ki", 1024.0),
    ("1ki", 1024.0),
    ("1KI", 1024.0),
    ("1kI", 1024.0),
    ("1Mi", 2.0**20),
    ("1mi", 2.0**20),
    ("1.5Gi", 1.5 * 2**30),
    ("1.5gi", 1.5 * 2**30),
    ("2Ti", 2.0 * 2**40),
    ("2TI", 2.0 * 2**40),
    ("-1.5K", -1500.0),
    (" 1.5 G ", 1.5e9),
    ("\t2Gi\n", 2.0 * 2**30),
])
def test_parse_quantity(text, expected):
    assert extra_specs.parse_quantity(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", [
    "", "   ", "abc", "1.5Q", "nan", "NaN", "inf", "-inf", "infinity",
    "1e400", "1e300T", "G", "1.5.5", "1 000", "1_000", "0x10", "1GG",
    "1Gib", "1iG", "--1", "1e", "1.5 G i", "\u0661",
])
def test_parse_quantity_rejects(text):
    with pytest.raises(ValueError):
        extra_specs.parse_quantity(text)


def test_parse_quantity_rejects_non_strings():
    with pytest.raises(ValueError):
        extra_specs.parse_quantity(None)  # type: ignore[arg-type]


# --- resources specs -----------------------------------------------------


@pytest.mark.parametrize(("value", "op", "threshold"), [
    ("<85M", "<", 85e6),
    ("<=85M", "<=", 85e6),
    (">85M", ">", 85e6),
    (">=1.5G", ">=", 1.5e9),
    ("=4", "=", 4.0),
    ("==4", "==", 4.0),
    ("!=4", "!=", 4.0),
    (">= 1.5G", ">=", 1.5e9),
    ("  >=   1.5 G  ", ">=", 1.5e9),
    ("<=1.5Gi", "<=", 1.5 * 2**30),
    ("<-5", "<", -5.0),
])
def test_parse_threshold(value, op, threshold):
    (spec,) = extra_specs.parse_resource_specs(
        {"resources:network.rx.bps": value})
    assert spec.key == "resources:network.rx.bps"
    assert spec.metric == "network.rx.bps"
    assert spec.goal is None
    assert spec.op == op
    assert spec.threshold == pytest.approx(threshold)
    assert spec.raw == value
    assert spec.is_threshold


@pytest.mark.parametrize(("value", "goal"), [
    ("max", "max"), ("min", "min"), ("MAX", "max"), ("Min", "min"),
    ("  max ", "max"),
])
def test_parse_goal(value, goal):
    (spec,) = extra_specs.parse_resource_specs({"resources:cpu.percent":
                                                value})
    assert spec.goal == goal
    assert spec.op is None
    assert spec.threshold is None
    assert not spec.is_threshold
    assert spec.satisfied_by(1e30)
    assert str(spec) == f"cpu.percent={goal}"


@pytest.mark.parametrize(("key", "value"), [
    ("resources:memory.free", "maxx"),
    ("resources:memory.free", "<abc"),
    ("resources:memory.free", ">=1.5Q"),
    ("resources:memory.free", "=>5"),
    ("resources:memory.free", "=<5"),
    ("resources:memory.free", "<>5"),
    ("resources:memory.free", "===5"),
    ("resources:memory.free", ">="),
    ("resources:memory.free", ""),
    ("resources:memory.free", "  "),
    ("resources:memory.free", "5"),
    ("resources:memory.free", "~5"),
    ("resources:memory.free", ">=nan"),
    ("resources:memory.free", "<1e400"),
    ("resources:memory.free", "max min"),
    ("resources:", "max"),
    ("resources:Bad.Name", "max"),
    ("resources:memory..free", "max"),
    ("resources:memory free", "max"),
    ("resources:memory.free:x", "max"),
])
def test_parse_resource_specs_rejects(key, value):
    with pytest.raises(InvalidExtraSpec) as info:
        extra_specs.parse_resource_specs({key: value})
    error = info.value
    assert isinstance(error, exception.SchedulerError)
    assert error.key == key
    assert error.value == value
    assert key in str(error)
    assert repr(value) in str(error)


def test_invalid_value_message_names_the_expected_form():
    with pytest.raises(InvalidExtraSpec) as info:
        extra_specs.parse_resource_specs({"resources:memory.free": "maxx"})
    assert str(info.value) == (
        "invalid extra spec resources:memory.free='maxx': expected max, "
        "min or <op><number>[K|M|G|T|Ki|Mi|Gi|Ti] with op one of <, <=, >, "
        ">=, =, ==, !=")


def test_invalid_metric_name_message():
    with pytest.raises(InvalidExtraSpec, match="metric name"):
        extra_specs.parse_resource_specs({"resources:Bad.Name": "max"})


def test_parse_resource_specs_ignores_other_scopes_and_sorts():
    specs = extra_specs.parse_resource_specs({
        "resources:network.rx.bps": "<85M",
        "capabilities:cpu_info:arch": "x86_64",
        "hw:cpu_policy": "dedicated",
        "resourcesx:cpu.percent": "max",
        "vcpus": "4",
        "resources:cpu.percent": "min",
        "resources:memory.free": ">=1Gi",
    })
    assert [s.key for s in specs] == [
        "resources:cpu.percent", "resources:memory.free",
        "resources:network.rx.bps"]


def test_parse_resource_specs_custom_scope():
    specs = extra_specs.parse_resource_specs(
        {"metrics:cpu.percent": "<50", "resources:cpu.percent": "bogus"},
        scope="metrics")
    assert [(s.key, s.metric, s.op) for s in specs] == [
        ("metrics:cpu.percent", "cpu.percent", "<")]


def test_parse_resource_specs_empty():
    assert extra_specs.parse_resource_specs({}) == []


@pytest.mark.parametrize(("value", "passing", "failing"), [
    ("<85M", [84e6, -1.0], [85e6, 86e6]),
    ("<=85M", [85e6, 0.0], [85e6 + 1]),
    (">85M", [85e6 + 1], [85e6, 0.0]),
    (">=85M", [85e6, 1e12], [85e6 - 1]),
    ("=85M", [85e6], [85e6 + 1, 0.0]),
    ("==1.1G", [1.1e9, 1.1 * 1e9], [1.1e9 + 1]),
    ("!=0", [1.0, -1.0], [0.0]),
    # Float noise in the operator's number does not break equality.
    ("=0.3", [0.1 + 0.2], [0.3000001]),
    ("!=0.3", [0.3000001], [0.1 + 0.2]),
    ("<=1Ki", [1024.0], [1025.0]),
])
def test_satisfied_by(value, passing, failing):
    (spec,) = extra_specs.parse_resource_specs({"resources:x": value})
    for number in passing:
        assert spec.satisfied_by(number), (value, number)
    for number in failing:
        assert not spec.satisfied_by(number), (value, number)


@pytest.mark.parametrize(("value", "text"), [
    (">=85M", "network.rx.bps>=85M"),
    (">= 85M", "network.rx.bps>=85M"),
    ("  <  85 m ", "network.rx.bps<85m"),
    ("!=1.5Gi", "network.rx.bps!=1.5Gi"),
])
def test_compact_form(value, text):
    (spec,) = extra_specs.parse_resource_specs(
        {"resources:network.rx.bps": value})
    assert str(spec) == text
    assert spec.compact == text


def test_resource_spec_is_frozen_and_hashable():
    (spec,) = extra_specs.parse_resource_specs({"resources:x": "<1"})
    with pytest.raises(AttributeError):
        spec.op = ">"  # type: ignore[misc]
    assert len({spec, spec}) == 1


def test_request_spec_parses_resources_and_rejects_bad_ones():
    spec = RequestSpec.from_dict({"flavor": {"extra_specs": {
        "resources:network.rx.bps": "<85M", "resources:cpu.percent": "min"}}})
    assert [str(r) for r in spec.resources] == [
        "cpu.percent=min", "network.rx.bps<85M"]
    with pytest.raises(InvalidExtraSpec, match="resources:memory.free"):
        RequestSpec.from_dict({"flavor": {"extra_specs": {
            "resources:memory.free": "maxx"}}})
