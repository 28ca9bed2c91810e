"""Unit tests of scheduler.weights.normalization."""

import math
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oslo_config import cfg

import scheduler.conf
from scheduler import exception
from scheduler.weights import normalization
from scheduler.weights.normalization import normalize


@pytest.fixture
def conf() -> Iterator[cfg.ConfigOpts]:
    conf = cfg.ConfigOpts()
    scheduler.conf.register_opts(conf)
    conf([])
    yield conf
    # scheduler.conf registers module-level OptGroups, whose options
    # oslo.config shares between ConfigOpts objects: without this reset
    # an override here would leak into other tests (and cfg.CONF).
    conf.reset()


def approx(values):
    return [None if v is None else pytest.approx(v) for v in values]


# The worked example of the module docstring (quoted by the operator
# guide): free RAM of hosts A, B, C and an unavailable host D.
EXAMPLE = [1024.0, 2048.0, 4096.0, None]


@pytest.mark.parametrize("mode, maximum, expected", [
    ("minmax", None, [0.0, 1 / 3, 1.0, None]),
    ("rank", None, [0.0, 1.0, 2.0, None]),
    ("hardmax", 8192.0, [0.125, 0.25, 0.5, None]),
    ("hardmax", None, [0.25, 0.5, 1.0, None]),
    ("none", None, [1024.0, 2048.0, 4096.0, None]),
])
def test_worked_example(mode, maximum, expected):
    assert normalize(mode, EXAMPLE, maximum) == approx(expected)
    assert normalize(mode, EXAMPLE[:3], maximum) == \
        normalize(mode, EXAMPLE, maximum)[:3]


def test_worked_example_ties():
    assert normalize("rank", [5.0, 5.0, 1.0]) == [2.0, 2.0, 0.0]
    assert normalize("rank", [5.0, 1.0, 1.0]) == [2.0, 1.0, 1.0]


# -- minmax ---------------------------------------------------------------

def test_minmax_scales_to_unit_interval():
    assert normalize("minmax", [10.0, 30.0, 20.0]) == [0.0, 1.0, 0.5]


def test_minmax_negative_values():
    assert normalize("minmax", [-4.0, 0.0, 4.0]) == [0.0, 0.5, 1.0]
    assert normalize("minmax", [-3.0, -1.0]) == [0.0, 1.0]


@pytest.mark.parametrize("raw", [[7.0, 7.0, 7.0], [7.0], [-2.5, -2.5]])
def test_minmax_all_equal_or_single_is_zero(raw):
    assert normalize("minmax", raw) == [0.0] * len(raw)


def test_minmax_ties_share_value():
    assert normalize("minmax", [1.0, 3.0, 3.0]) == [0.0, 1.0, 1.0]


# -- rank -----------------------------------------------------------------

def test_rank_orders_best_highest():
    assert normalize("rank", [30.0, 10.0, 20.0, 40.0]) == \
        [2.0, 0.0, 1.0, 3.0]


def test_rank_ties_share_upper_rank():
    assert normalize("rank", [1.0, 2.0, 2.0, 3.0]) == [0.0, 2.0, 2.0, 3.0]


@pytest.mark.parametrize("raw", [[4.0, 4.0, 4.0], [4.0]])
def test_rank_all_equal_or_single(raw):
    # Everyone ties for best; nobody is preferred.
    n = len(raw)
    assert normalize("rank", raw) == [float(n - 1)] * n


def test_rank_negative_values_and_gaps():
    # Rank ignores the size of gaps: 1e9 ahead is just one rank ahead.
    assert normalize("rank", [-1e9, -1.0, 0.0]) == [0.0, 1.0, 2.0]


def test_rank_reproduces_seed_example():
    """oVirt seed 003: rank = hosts better than this one, lower is
    better. CPU load (factor 10) and occupied memory (factor 1) of hosts
    A, B, C are costs, so they are weighed negated; our rank is the
    seed's mirrored, (n - 1) - seed rank."""
    cpu = normalize("rank", [-90.0, -50.0, -10.0])
    memory = normalize("rank", [-1024.0, -2048.0, -4096.0])
    seed_cpu, seed_memory = [2, 1, 0], [0, 1, 2]
    assert cpu == [2.0 - r for r in seed_cpu]
    assert memory == [2.0 - r for r in seed_memory]
    seed_totals = [10 * c + m for c, m in zip(seed_cpu, seed_memory,
                                              strict=True)]
    assert seed_totals == [20, 11, 2]
    totals = [10 * c + m for c, m in zip(cpu, memory, strict=True)]
    # Seed: lower total wins (C); ours: higher total wins (C again).
    assert max(range(3), key=totals.__getitem__) == \
        min(range(3), key=seed_totals.__getitem__) == 2


# -- hardmax --------------------------------------------------------------

def test_hardmax_divides_by_configured_maximum():
    assert normalize("hardmax", [25.0, 50.0, 0.0], 100.0) == \
        [0.25, 0.5, 0.0]


def test_hardmax_clamps_to_minus_one_one():
    assert normalize("hardmax", [250.0, -300.0, -50.0], 100.0) == \
        [1.0, -1.0, -0.5]


def test_hardmax_dynamic_uses_largest_absolute_value():
    assert normalize("hardmax", [-8.0, 2.0, 4.0]) == [-1.0, 0.25, 0.5]


@pytest.mark.parametrize("raw", [[0.0, 0.0], [0.0]])
def test_hardmax_dynamic_all_zero(raw):
    assert normalize("hardmax", raw) == [0.0] * len(raw)


def test_hardmax_single_host_dynamic():
    assert normalize("hardmax", [-3.0]) == [-1.0]
    assert normalize("hardmax", [3.0]) == [1.0]


@pytest.mark.parametrize("maximum", [0.0, -5.0, math.inf, math.nan])
def test_hardmax_rejects_unusable_maximum(maximum):
    with pytest.raises(ValueError):
        normalize("hardmax", [1.0], maximum)


def test_hardmax_reproduces_seed_example():
    """oVirt seed 003, hard maximum 100 % CPU and 4096 MB, then dynamic
    maximum (the seed truncates its percentages)."""
    loads, occupied = [90.0, 50.0, 10.0], [1024.0, 2048.0, 4096.0]
    hard = [10 * 100 * c + 100 * m for c, m in zip(
        normalize("hardmax", loads, 100.0),
        normalize("hardmax", occupied, 4096.0), strict=True)]
    assert hard == approx([925.0, 550.0, 200.0])
    dynamic = [10 * int(100 * c) + int(100 * m) for c, m in zip(
        normalize("hardmax", loads), normalize("hardmax", occupied),
        strict=True)]
    assert dynamic == [1025, 600, 210]


# -- none and common ------------------------------------------------------

def test_none_keeps_raw_values():
    raw = [3.5, -2.0, None, 1e12]
    assert normalize("none", raw) == raw


@pytest.mark.parametrize("mode", normalization.MODES)
def test_none_stays_none_in_place(mode):
    result = normalize(mode, [None, 2.0, None, 4.0, None])
    assert [v is None for v in result] == [True, False, True, False, True]


@pytest.mark.parametrize("mode", normalization.MODES)
def test_all_unavailable_and_empty(mode):
    assert normalize(mode, [None, None]) == [None, None]
    assert normalize(mode, []) == []


def test_unknown_mode():
    with pytest.raises(ValueError, match="unknown weight normalization"):
        normalize("softmax", [1.0])


def test_unavailable_host_does_not_squash_the_others():
    """Nova's defect: the unavailable host's value (-10000) took part in
    min/max, so the real spread (0.1 .. 0.9) shrank to ~0. Here the
    unavailable host is None and the others keep their full spread."""
    available = [10.0, 50.0, 90.0]
    nova_like = normalize("minmax", [*available, -10000.0])[:3]
    assert max(nova_like) - min(nova_like) < 0.01
    for mode in normalization.MODES:
        with_unavailable = normalize(mode, [*available, None])
        assert with_unavailable[:3] == normalize(mode, available)
    assert normalize("minmax", [*available, None])[:3] == [0.0, 0.5, 1.0]


finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False)
modes = st.sampled_from(normalization.MODES)
maxima = st.one_of(st.none(), st.floats(min_value=1e-3, max_value=1e9))


@given(mode=modes, maximum=maxima,
       values=st.lists(finite, min_size=1, max_size=12),
       holes=st.lists(st.integers(min_value=0, max_value=12), max_size=5))
def test_property_unavailable_hosts_change_nothing(mode, maximum, values,
                                                   holes):
    raw: list[float | None] = list(values)
    for position in holes:
        raw.insert(min(position, len(raw)), None)
    result = normalize(mode, raw, maximum)
    assert [v for v in result if v is not None] == \
        normalize(mode, values, maximum)


@given(mode=modes, maximum=maxima,
       values=st.lists(finite, min_size=1, max_size=12))
def test_property_order_preserved_and_bounded(mode, maximum, values):
    result = normalize(mode, values, maximum)
    for a, na in zip(values, result, strict=True):
        for b, nb in zip(values, result, strict=True):
            if a < b:
                assert na <= nb
            if a == b:
                assert na == nb
    if mode == "minmax":
        assert all(0.0 <= v <= 1.0 for v in result)
    elif mode == "hardmax":
        assert all(-1.0 <= v <= 1.0 for v in result)
    elif mode == "rank":
        assert max(result) == len(values) - 1
        assert all(v >= 0 for v in result)


# -- weight_maximums ------------------------------------------------------

def test_weight_maximum_absent_is_none(conf):
    assert normalization.weight_maximum(conf, "RAMWeigher") is None
    assert normalization.validate_weight_maximums(conf) == {}


def test_weight_maximums_from_config_file(tmp_path):
    path = tmp_path / "scheduler.conf"
    path.write_text("[filter_scheduler]\n"
                    "weight_maximums = RAMWeigher:1048576, CPUWeigher:2.5\n")
    conf = cfg.ConfigOpts()
    scheduler.conf.register_opts(conf)
    conf(["--config-file", str(path)])
    assert normalization.weight_maximum(conf, "RAMWeigher") == 1048576.0
    assert normalization.weight_maximum(conf, "CPUWeigher") == 2.5
    assert normalization.weight_maximum(conf, "DiskWeigher") is None
    assert normalization.validate_weight_maximums(conf) == {
        "RAMWeigher": 1048576.0, "CPUWeigher": 2.5}


@pytest.mark.parametrize("value", ["lots", "", "1e3x"])
def test_weight_maximum_not_a_number(conf, value):
    conf.set_override("weight_maximums", {"RAMWeigher": value},
                      group="filter_scheduler")
    with pytest.raises(exception.ConfigError) as caught:
        normalization.weight_maximum(conf, "RAMWeigher")
    error = caught.value
    assert (error.group, error.option, error.value) == \
        ("filter_scheduler", "weight_maximums", value)
    assert "expected WeigherName:number pairs" in str(error)
    with pytest.raises(exception.ConfigError):
        normalization.validate_weight_maximums(conf)


@pytest.mark.parametrize("value", ["0", "-4", "inf", "nan"])
def test_weight_maximum_must_be_positive_and_finite(conf, value):
    conf.set_override("weight_maximums", {"CPUWeigher": value},
                      group="filter_scheduler")
    with pytest.raises(exception.ConfigError, match="weight_maximums"):
        normalization.validate_weight_maximums(conf)


def _minmax_by_definition(raw: np.ndarray) -> np.ndarray:
    """minmax of the available values, written out: NaN stays NaN."""
    missing = np.isnan(raw)
    available = raw[~missing]
    if not available.size:
        return np.where(missing, np.nan, 0.0)
    lowest = available.min()
    spread = available.max() - lowest
    if spread == 0:
        return np.where(missing, np.nan, 0.0)
    return (raw - lowest) / spread


@given(st.lists(st.one_of(
    st.floats(), st.sampled_from([0.0, -0.0, 1e308, -1e308, math.inf])),
    max_size=12))
def test_property_minmax_is_its_definition_to_the_bit(values):
    # Complete and finite arrays take a shorter path (their extremes
    # alone); NaN, infinities and spreads past the doubles do not.
    raw = np.array(values, dtype=float)
    got = normalization.normalize_array("minmax", raw)
    want = _minmax_by_definition(raw)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all()
    assert got[~nan].tobytes() == want[~nan].tobytes()


@pytest.mark.parametrize("values, expected", [
    ([], False), ([1.0, 2.0], False), ([1.0, math.nan], True),
    ([math.inf, -math.inf], False), ([math.nan, math.inf], True),
])
def test_has_nan(values, expected):
    assert normalization.has_nan(np.array(values, dtype=float)) is expected
