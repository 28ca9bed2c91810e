"""``[metrics] weight_setting_scale``: with minmax and rank the metrics of
weight_setting (and several resources: goals) are unit-free and the
ratios say only how much each one matters."""

import datetime
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from oslo_config import cfg

import scheduler.conf
from scheduler.hosts.state import HostState
from scheduler.hosts.state import Metric
from scheduler.request.spec import RequestSpec
from scheduler.weights.metrics import MetricsWeigher
from scheduler.weights.resources import ResourcesWeigher

NOW = datetime.datetime(2026, 11, 21, 12, 0)
GB = 10 ** 9
METRICS = ("memory.free", "cpu.percent", "network.rx.bps")
SCALED = ("minmax", "rank")
PROPERTY = settings(max_examples=150, deadline=None)


@pytest.fixture(scope="module")
def conf() -> Iterator[cfg.ConfigOpts]:
    conf = cfg.ConfigOpts()
    scheduler.conf.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    yield conf
    # Module-level OptGroups share overrides with every ConfigOpts.
    conf.reset()


def hosts_of(values: list[dict[str, float]]) -> list[HostState]:
    return [HostState(node_id=i, uuid=f"u{i}", host=f"h{i}",
                      nodename=f"h{i}",
                      metrics={name: Metric(value, NOW)
                               for name, value in metrics.items()})
            for i, metrics in enumerate(values)]


def spec(extra_specs: dict[str, str] | None = None) -> RequestSpec:
    found = RequestSpec.from_dict({"flavor": {
        "name": "m1", "vcpus": 1, "memory_mb": 512, "root_gb": 1,
        "extra_specs": extra_specs or {}}})
    found.start_call(NOW)
    return found


def metric_weights(conf, mode: str, setting: list[tuple[str, float]],
                   values: list[dict[str, float]]) -> list[float | None]:
    conf.set_override("weight_setting", setting, group="metrics")
    conf.set_override("weight_setting_scale", mode, group="metrics")
    return MetricsWeigher(conf).raw_weights(hosts_of(values), spec())


def best(weights: list[float | None]) -> int:
    return max(range(len(weights)), key=lambda i: weights[i])


# The operator guide's worked example: naive ratios of 1, bytes and
# percent. Raw, 64 GB free swamps 95 % busy; minmax and rank weigh both.
GUIDE_HOSTS = [
    {"memory.free": 64 * GB, "cpu.percent": 95.0},   # host-a
    {"memory.free": 48 * GB, "cpu.percent": 10.0},   # host-b
    {"memory.free": 16 * GB, "cpu.percent": 50.0},   # host-c
]
GUIDE_SETTING = [("memory.free", 1.0), ("cpu.percent", -1.0)]


@pytest.mark.parametrize("mode, weights", [
    ("raw", [64 * GB - 95.0, 48 * GB - 10.0, 16 * GB - 50.0]),
    # memory 1, 2/3, 0; CPU (smaller is better) 0, 1, 45/85
    ("minmax", [1.0, 2 / 3 + 1.0, 45 / 85]),
    # memory ranks 2, 1, 0; CPU ranks 0, 2, 1
    ("rank", [2.0, 3.0, 1.0]),
])
def test_guide_example(conf, mode, weights):
    found = metric_weights(conf, mode, GUIDE_SETTING, GUIDE_HOSTS)
    assert found == pytest.approx(weights)
    assert best(found) == (0 if mode == "raw" else 1)


# No values so tiny that a change of unit could round them (subnormals).
metric_values = st.floats(-1e12, 1e12, allow_nan=False).filter(
    lambda value: value == 0 or abs(value) >= 1e-9) | st.sampled_from(
    (0.0, 1.0, 50.0, 100.0))
fleets = st.lists(st.fixed_dictionaries(
    dict.fromkeys(METRICS, metric_values)), min_size=1, max_size=8)
settings_ = st.lists(
    st.tuples(st.sampled_from(METRICS),
              st.sampled_from((-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0))),
    min_size=1, max_size=3, unique_by=lambda pair: pair[0])
# Powers of two: a change of unit that rounds nothing, so that the weights
# must come out identical, not merely close.
units = st.integers(-40, 40).map(lambda power: 2.0 ** power)


@PROPERTY
@given(mode=st.sampled_from(SCALED), values=fleets, setting=settings_,
       unit=units, metric=st.sampled_from(METRICS))
def test_weights_do_not_depend_on_units(conf, mode, values, setting, unit,
                                        metric):
    converted = [{**host, metric: host[metric] * unit} for host in values]
    assert metric_weights(conf, mode, setting, converted) == \
        metric_weights(conf, mode, setting, values)


@PROPERTY
@given(mode=st.sampled_from(SCALED),
       a=st.tuples(metric_values, metric_values).filter(
           lambda pair: pair[0] != pair[1]),
       b=st.tuples(metric_values, metric_values).filter(
           lambda pair: pair[0] != pair[1]),
       ratios=st.tuples(st.sampled_from((-3.0, -1.0, 1.0, 3.0)),
                        st.sampled_from((-2.0, -0.5, 0.5, 2.0))))
def test_ratios_say_which_metric_matters_more(conf, mode, a, b, ratios):
    # Host x is best on memory.free and worst on cpu.percent (as each
    # ratio's sign prefers), host y the reverse: x wins exactly when
    # memory.free's ratio is the larger, whatever the numbers.
    ra, rb = ratios
    pick = {True: max, False: min}
    x = {"memory.free": pick[ra > 0](a), "cpu.percent": pick[rb < 0](b)}
    y = {"memory.free": pick[ra < 0](a), "cpu.percent": pick[rb > 0](b)}
    weights = metric_weights(conf, mode, [("memory.free", ra),
                                          ("cpu.percent", rb)],
                             [{**x, "network.rx.bps": 0.0},
                              {**y, "network.rx.bps": 0.0}])
    assert weights == [abs(ra), abs(rb)]


@PROPERTY
@given(mode=st.sampled_from(SCALED), values=fleets, setting=settings_,
       missing=st.sampled_from(METRICS), extreme=metric_values)
def test_unavailable_hosts_do_not_scale_the_others(conf, mode, values,
                                                   setting, missing,
                                                   extreme):
    # A host lacking one metric of weight_setting, with an extreme value
    # of the others: no weight, and the others' weights are unchanged.
    lacking = {name: extreme for name in METRICS if name != missing}
    found = metric_weights(conf, mode, setting, [*values, lacking])
    alone = metric_weights(conf, mode, setting, values)
    if missing in dict(setting):
        assert found == [*alone, None]
    else:
        # Not weighed: the host is a candidate like the others.
        assert found[-1] is not None


@PROPERTY
@given(mode=st.sampled_from(SCALED), values=fleets, unit=units,
       goals=st.dictionaries(st.sampled_from(METRICS),
                             st.sampled_from(("max", "min")), min_size=2))
def test_resources_goals_do_not_depend_on_units(conf, mode, values, unit,
                                                goals):
    conf.set_override("weight_setting_scale", mode, group="metrics")
    extra_specs = {f"resources:{name}": goal for name, goal in goals.items()}
    metric = sorted(goals)[0]
    converted = [{**host, metric: host[metric] * unit} for host in values]
    weigher = ResourcesWeigher(conf)
    found = weigher.raw_weights(hosts_of(values), spec(extra_specs))
    assert weigher.raw_weights(hosts_of(converted),
                               spec(extra_specs)) == found
    # Every goal scores its best host highest: a host best on all of
    # them has the largest weight.
    if mode == "minmax":
        assert all(0.0 <= weight <= len(goals) for weight in found)


def test_raw_is_the_plain_sum(conf):
    found = metric_weights(conf, "raw", GUIDE_SETTING, GUIDE_HOSTS)
    assert found == [64 * GB - 95.0, 48 * GB - 10.0, 16 * GB - 50.0]


def test_a_bad_scale_is_refused(conf):
    with pytest.raises(ValueError):
        conf.set_override("weight_setting_scale", "zscore", group="metrics")
