"""LoadRiskWeigher: low and steady CPU load wins."""

import importlib.metadata

import pytest

from scheduler.weights import NAMESPACE
from scheduler.weights.load_risk import LoadRiskWeigher
from tests.unit.weights.loads import clear_metrics_overrides
from tests.unit.weights.loads import loaded_host
from tests.unit.weights.loads import spec


@pytest.fixture(autouse=True)
def _clear_overrides(conf):
    yield
    clear_metrics_overrides(conf)


def test_registered_under_its_name():
    points = importlib.metadata.entry_points(group=NAMESPACE)
    assert {"LoadRiskWeigher", "TargetLoadWeigher",
            "InstanceLoadWeigher"} <= set(points.names)


def test_mean_plus_risk_factor_times_stddev_with_the_new_load(conf):
    # 8 vCPUs, 2 of them expected busy: +25 percent.
    steady = loaded_host("steady", [30.0, 30.0, 30.0, 30.0])
    spiky = loaded_host("spiky", [0.0, 40.0, 0.0, 40.0])
    weights = LoadRiskWeigher(conf).raw_weights([steady, spiky], spec())
    assert weights[0] == pytest.approx(-(30.0 + 25.0))
    assert weights[1] == pytest.approx(-(20.0 + 25.0 + 20.0))
    # Without the risk the spiky host, quieter on average, wins.
    conf.set_override("risk_factor", 0.0, "metrics")
    weights = LoadRiskWeigher(conf).raw_weights([steady, spiky], spec())
    assert weights[1] > weights[0]


def test_the_window_limits_what_is_weighed(conf):
    conf.set_override("risk_window", 120.0, "metrics")
    host = loaded_host("h", [90.0, 90.0, 10.0, 10.0])
    assert LoadRiskWeigher(conf).raw_weight(host, spec()) == \
        pytest.approx(-35.0)


def test_expected_load_of_a_percent(conf):
    conf.set_override("expected_instance_cpu", "50", "metrics")
    host = loaded_host("h", [10.0])
    assert LoadRiskWeigher(conf).raw_weight(host, spec()) == \
        pytest.approx(-(10.0 + 12.5))


def test_pending_claims_count_at_the_expected_share(conf):
    host = loaded_host("h", [10.0], vcpus_pending=4,
                       pending_cpu_fraction=0.5)
    assert LoadRiskWeigher(conf).raw_weight(host, spec(vcpus=0)) == \
        pytest.approx(-(10.0 + 25.0))


def test_a_host_without_cpu_percent_has_no_weight(conf):
    host = loaded_host("h", [10.0], age=3600.0)
    assert LoadRiskWeigher(conf).raw_weight(host, spec()) is None


def test_multiplier(conf):
    conf.set_override("load_risk_weight_multiplier", 3.0, "metrics")
    assert LoadRiskWeigher(conf).multiplier(spec()) == 3.0
