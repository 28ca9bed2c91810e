"""InstanceLoadWeigher: a host's load predicted from its instances."""

import datetime

import pytest

from scheduler.hosts import history
from scheduler.hosts.state import Metric
from scheduler.weights.instance_load import InstanceLoadWeigher
from scheduler.weights.instance_load import predicted_busy_vcpus
from tests.unit.weights.loads import clear_metrics_overrides
from tests.unit.weights.loads import loaded_host
from tests.unit.weights.loads import spec

NOW = datetime.datetime(2026, 1, 5, 12, 0)


@pytest.fixture(autouse=True)
def _clear_overrides(conf):
    yield
    clear_metrics_overrides(conf)


def with_instances(name: str, measured: dict[str, float],
                   unmeasured: int = 0):
    """A host of 8 vCPUs running 2-vCPU instances: those of ``measured``
    at their instance.cpu.percent, ``unmeasured`` more never reported."""
    flavors = dict.fromkeys(measured, (2, 2048))
    flavors |= {f"{name}-new-{i}": (2, 2048) for i in range(unmeasured)}
    return loaded_host(
        name, [99.0], instances=set(flavors), instance_flavors=flavors,
        vcpus_claimed=2 * len(flavors),
        instance_metrics={uuid: {"instance.cpu.percent": Metric(
            value, NOW)} for uuid, value in measured.items()})


def test_measured_instances_count_at_their_load():
    host = with_instances("h", {"a": 50.0, "b": 100.0}, unmeasured=1)
    # 2 x 0.5 + 2 x 1.0 + 2 x fallback
    assert predicted_busy_vcpus(host, 0.25, 3600.0) == pytest.approx(3.5)


def test_load_of_instances_gone_is_forgotten(conf):
    # The host's own cpu.percent (99) still holds a departed instance.
    quiet = with_instances("quiet", {"a": 10.0})
    busy = with_instances("busy", {"a": 90.0, "b": 90.0})
    weights = InstanceLoadWeigher(conf).raw_weights([quiet, busy], spec())
    # 100 x (0.2 + 2) / 8 and 100 x (3.6 + 2) / 8.
    assert weights == pytest.approx([-27.5, -70.0])


def test_claims_without_a_measurement_count_at_the_expected_share(conf):
    conf.set_override("expected_instance_cpu", "50", "metrics")
    host = with_instances("h", {}, unmeasured=2)
    host.vcpus_claimed += 2  # consumed by this request
    assert InstanceLoadWeigher(conf).raw_weight(host, spec()) == \
        pytest.approx(-(100.0 * 3.0 / 8 + 12.5))


def test_expected_load_measured_from_the_same_flavor(conf):
    conf.set_override("expected_instance_cpu", "measured", "metrics")
    first = with_instances("first", {"a": 20.0})
    second = with_instances("second", {"b": 40.0})
    # Flavor (2, 2048) is measured at 30 percent on average: +7.5.
    weights = InstanceLoadWeigher(conf).raw_weights([first, second],
                                                    spec())
    assert weights[0] == pytest.approx(-(100.0 * 0.4 / 8 + 7.5))
    # Another flavor falls back to expected_fallback_percent (100).
    assert InstanceLoadWeigher(conf).raw_weight(
        first, spec(memory_mb=4096)) == pytest.approx(-(5.0 + 25.0))


def _held(values: list[float]) -> history.MetricHistory:
    """Instance "a"'s instance.cpu.percent, one report a minute."""
    held = history.EMPTY
    for minute, value in enumerate(values):
        held = held.appended({"a": Metric(
            value, NOW + minute * datetime.timedelta(minutes=1))}, 3600.0)
    return held


def test_an_instances_mean_over_expected_window_is_used(conf):
    conf.set_override("instance_load_risk_factor", 0.0, "metrics")
    host = with_instances("h", {"a": 80.0})
    host.instance_history = _held([20.0, 50.0, 80.0])
    # 2 vCPUs at a 50 % mean: 1 of 8 busy, plus the new 2 of 8.
    assert InstanceLoadWeigher(conf).raw_weight(host, spec()) == \
        pytest.approx(-(12.5 + 25.0))
    conf.set_override("expected_window", 60.0, "metrics")
    assert InstanceLoadWeigher(conf).raw_weight(host, spec()) == \
        pytest.approx(-(20.0 + 25.0))


def test_a_wandering_instance_counts_its_spread_times_the_risk_factor(conf):
    steady = with_instances("steady", {"a": 50.0})
    steady.instance_history = _held([50.0, 50.0, 50.0, 50.0])
    wandering = with_instances("wandering", {"a": 50.0})
    wandering.instance_history = _held([0.0, 100.0, 0.0, 100.0])
    # Same mean (1 of 8 vCPUs); the wandering one's stddev is 50 % of 2
    # vCPUs: one more busy vCPU per risk factor.
    conf.set_override("instance_load_risk_factor", 2.0, "metrics")
    weights = InstanceLoadWeigher(conf).raw_weights([steady, wandering],
                                                    spec())
    assert weights == pytest.approx([-(12.5 + 25.0),
                                     -(12.5 + 25.0 + 2 * 12.5)])
    conf.set_override("instance_load_risk_factor", 0.0, "metrics")
    assert InstanceLoadWeigher(conf).raw_weights(
        [steady, wandering], spec()) == pytest.approx([-37.5, -37.5])
