"""Flavor extra specs naming a windowed statistic
(``resources:cpu.percent:mean:1h=<70``)."""

import pytest

from scheduler.filters import resources_threshold_filter
from scheduler.request.extra_specs import InvalidExtraSpec
from scheduler.request.extra_specs import parse_resource_spec
from scheduler.request.spec import RequestSpec
from tests.unit.weights.loads import loaded_host

MEAN_SPEC = {"resources:cpu.percent:mean:1h": "<50"}


def make_spec(extra_specs: dict[str, str]) -> RequestSpec:
    return RequestSpec.from_dict({"flavor": {
        "name": "m1", "vcpus": 1, "memory_mb": 512, "root_gb": 1,
        "extra_specs": extra_specs}})


@pytest.fixture
def thresholds(conf):
    return resources_threshold_filter.ResourcesThresholdFilter(conf)


def test_the_windowed_mean_decides_not_the_last_report(thresholds):
    # Quiet on average, busy in the last report: kept.
    spiky = loaded_host("spiky", [10.0, 10.0, 10.0, 90.0])
    assert thresholds.reject(spiky, make_spec(MEAN_SPEC)) is None
    busy = loaded_host("busy", [60.0, 60.0, 60.0, 20.0])
    rejection = thresholds.reject(busy, make_spec(MEAN_SPEC))
    assert rejection.reason == "cpu.percent:mean:1h<50"
    assert "cpu.percent:mean:1h is 50" in rejection.detail


def test_a_missing_statistic_is_named_with_its_metric(thresholds):
    host = loaded_host("h", [10.0])
    host.metrics = {}
    rejection = thresholds.reject(host, make_spec(MEAN_SPEC))
    assert rejection.reason == "cpu.percent:mean:1h unavailable"
    assert rejection.detail == "cpu.percent not reported"


@pytest.mark.parametrize("key, named", [
    ("resources:cpu.percent:median:1h", "unknown statistic 'median'"),
    ("resources:cpu.percent:mean:1y", "window '1y' is not a duration"),
])
def test_a_bad_statistic_is_refused_naming_it(key, named):
    with pytest.raises(InvalidExtraSpec, match=named):
        parse_resource_spec(key, "<50")
