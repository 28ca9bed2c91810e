"""Unit tests of the built-in weighers (raw weights and multipliers)."""

import importlib.metadata
from collections.abc import Iterator

import pytest
from oslo_config import cfg

import scheduler.conf
from scheduler.hosts.state import MIB
from scheduler.request.spec import RequestSpec
from scheduler.weights import NAMESPACE
from scheduler.weights import BaseHostWeigher
from scheduler.weights.affinity import ServerGroupSoftAffinityWeigher
from scheduler.weights.affinity import ServerGroupSoftAntiAffinityWeigher
from scheduler.weights.cpu import CPUWeigher
from scheduler.weights.disk import DiskWeigher
from scheduler.weights.metrics import MetricsWeigher
from scheduler.weights.normalization import normalize
from scheduler.weights.num_instances import NumInstancesWeigher
from scheduler.weights.ram import RAMWeigher
from scheduler.weights.resources import ResourcesWeigher
from tests.fakes import make_host

GIB = 1024 * MIB


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


def make_spec(extra_specs: dict[str, str] | None = None,
              **hints) -> RequestSpec:
    return RequestSpec.from_dict({
        "flavor": {"name": "m1.small", "vcpus": 1, "memory_mb": 512,
                   "root_gb": 1, "extra_specs": extra_specs or {}},
        "scheduler_hints": hints,
    })


def test_entry_points_name_the_classes():
    points = importlib.metadata.entry_points(group=NAMESPACE)
    loaded = {point.name: point.load() for point in points}
    assert {name: cls.__name__ for name, cls in loaded.items()} == {
        name: name for name in loaded}
    assert set(loaded) >= {
        "RAMWeigher", "CPUWeigher", "DiskWeigher", "NumInstancesWeigher",
        "ServerGroupSoftAffinityWeigher",
        "ServerGroupSoftAntiAffinityWeigher", "MetricsWeigher",
        "ResourcesWeigher"}
    assert all(issubclass(cls, BaseHostWeigher) for cls in loaded.values())


# -- resource weighers ----------------------------------------------------

def test_ram_weigher(conf):
    host = make_host(memory_mb=8192, ram_allocation_ratio=1.5,
                     memory_mb_claimed=1024)
    weigher = RAMWeigher(conf)
    assert weigher.raw_weight(host, make_spec()) == 8192 * 1.5 - 1024
    assert weigher.multiplier(make_spec()) == 1.0
    conf.set_override("ram_weight_multiplier", -2.0, "filter_scheduler")
    assert weigher.multiplier(make_spec()) == -2.0
    assert weigher.applies(make_spec())
    assert not weigher.unavailable_removes_host(make_spec())


def test_cpu_weigher(conf):
    host = make_host(vcpus=8, cpu_allocation_ratio=4.0, vcpus_claimed=5)
    weigher = CPUWeigher(conf)
    assert weigher.raw_weight(host, make_spec()) == 27.0
    conf.set_override("cpu_weight_multiplier", 0.5, "filter_scheduler")
    assert weigher.multiplier(make_spec()) == 0.5


def test_disk_weigher(conf):
    host = make_host(disk_gb=100, disk_allocation_ratio=1.0,
                     disk_gb_claimed=30)
    weigher = DiskWeigher(conf)
    assert weigher.raw_weight(host, make_spec()) == 70.0
    conf.set_override("disk_weight_multiplier", 3.0, "filter_scheduler")
    assert weigher.multiplier(make_spec()) == 3.0


def test_num_instances_weigher(conf):
    host = make_host(instances={"a", "b", "c"})
    weigher = NumInstancesWeigher(conf)
    assert weigher.raw_weight(host, make_spec()) == 3.0
    assert weigher.raw_weight(make_host(), make_spec()) == 0.0
    assert weigher.multiplier(make_spec()) == 0.0
    conf.set_override("num_instances_weight_multiplier", -1.0,
                      "filter_scheduler")
    assert weigher.multiplier(make_spec()) == -1.0


def test_claims_made_here_lower_free_resources(conf):
    host = make_host(vcpus=4, memory_mb=4096, disk_gb=40,
                     ram_allocation_ratio=1.0, cpu_allocation_ratio=1.0)
    host.consume(vcpus=1, memory_mb=1024, disk_gb=10)
    spec = make_spec()
    assert [w(conf).raw_weight(host, spec)
            for w in (RAMWeigher, CPUWeigher, DiskWeigher)] == \
        [3072.0, 3.0, 30.0]


# -- server group weighers ------------------------------------------------

def test_soft_affinity_applies_only_to_its_policy(conf):
    weigher = ServerGroupSoftAffinityWeigher(conf)
    assert weigher.applies(make_spec(group="g1",
                                     group_policy="soft-affinity"))
    assert not weigher.applies(make_spec(group_policy="soft-affinity"))
    assert not weigher.applies(make_spec(group="g1",
                                         group_policy="affinity"))
    assert not weigher.applies(make_spec(
        group="g1", group_policy="soft-anti-affinity"))
    assert not weigher.applies(make_spec())


def test_soft_affinity_prefers_hosts_with_members(conf):
    weigher = ServerGroupSoftAffinityWeigher(conf)
    spec = make_spec(group="g1", group_policy="soft-affinity")
    member = make_host("a", instance_groups={"g1", "g2"})
    other = make_host("b", instance_groups={"g2"})
    assert weigher.raw_weights([member, other, make_host("c")], spec) == \
        [1.0, 0.0, 0.0]
    conf.set_override("soft_affinity_weight_multiplier", 4.0,
                      "filter_scheduler")
    assert weigher.multiplier(spec) == 4.0


def test_soft_anti_affinity_prefers_hosts_without_members(conf):
    weigher = ServerGroupSoftAntiAffinityWeigher(conf)
    spec = make_spec(group="g1", group_policy="soft-anti-affinity")
    assert weigher.applies(spec)
    assert not weigher.applies(make_spec(group="g1",
                                         group_policy="soft-affinity"))
    assert not weigher.applies(make_spec(group_policy="soft-anti-affinity"))
    member = make_host("a", instance_groups={"g1"})
    assert weigher.raw_weights([member, make_host("b")], spec) == \
        [-1.0, 0.0]
    assert weigher.multiplier(spec) == 1.0
    conf.set_override("soft_anti_affinity_weight_multiplier", 2.0,
                      "filter_scheduler")
    assert weigher.multiplier(spec) == 2.0


def test_soft_affinity_sees_members_placed_in_this_request(conf):
    weigher = ServerGroupSoftAntiAffinityWeigher(conf)
    spec = make_spec(group="g1", group_policy="soft-anti-affinity")
    host = make_host("a", vcpus=4, memory_mb=4096)
    host.consume(1, 512, 1, instance_uuid="i-1", group="g1")
    assert weigher.raw_weight(host, spec) == -1.0


# -- MetricsWeigher -------------------------------------------------------

def metrics_conf(conf, setting: str, **overrides) -> cfg.ConfigOpts:
    conf.set_override("weight_setting", setting, "metrics")
    for name, value in overrides.items():
        conf.set_override(name, value, "metrics")
    return conf


def test_metrics_weigher_needs_a_weight_setting(conf):
    weigher = MetricsWeigher(conf)
    assert not weigher.applies(make_spec())
    metrics_conf(conf, "cpu.percent=-1.0")
    assert weigher.applies(make_spec())


def test_metrics_weigher_sums_ratio_times_value(conf):
    metrics_conf(conf, "memory.free=1.0, cpu.percent=-2.5")
    host = make_host(metrics={"memory.free": 2 * GIB, "cpu.percent": 40})
    assert MetricsWeigher(conf).raw_weight(host, make_spec()) == \
        2 * GIB - 100.0


def test_metrics_weigher_keeps_decimals(conf):
    metrics_conf(conf, "cpu.percent=-1.0, memory.percent=0.5")
    host = make_host(metrics={"cpu.percent": 12.75,
                              "memory.percent": 33.3})
    raw = MetricsWeigher(conf).raw_weight(host, make_spec())
    assert raw == pytest.approx(-12.75 + 16.65)
    assert raw != int(raw)


def test_metrics_weigher_counts_pending_memory_claims(conf):
    metrics_conf(conf, "memory.free=1.0")
    host = make_host(vcpus=8, memory_mb=8192,
                     metrics={"memory.free": 6 * GIB})
    weigher = MetricsWeigher(conf)
    assert weigher.raw_weight(host, make_spec()) == 6 * GIB
    host.consume(vcpus=2, memory_mb=2048, disk_gb=0)
    assert weigher.raw_weight(host, make_spec()) == 4 * GIB


def test_metrics_weigher_pending_claims_reorder_hosts(conf):
    metrics_conf(conf, "memory.free=1.0")
    big = make_host("big", memory_mb=8192,
                    metrics={"memory.free": 5 * GIB})
    small = make_host("small", memory_mb=8192,
                      metrics={"memory.free": 4 * GIB})
    weigher = MetricsWeigher(conf)
    assert weigher.raw_weights([big, small], make_spec()) == \
        [5 * GIB, 4 * GIB]
    big.consume(vcpus=0, memory_mb=2048, disk_gb=0)
    assert weigher.raw_weights([big, small], make_spec()) == \
        [3 * GIB, 4 * GIB]


def test_metrics_weigher_missing_or_stale_metric_is_none(conf):
    metrics_conf(conf, "memory.free=1.0, cpu.percent=-1.0", max_age=60)
    weigher = MetricsWeigher(conf)
    fresh = make_host("fresh", age=10,
                      metrics={"memory.free": 1.0, "cpu.percent": 1.0})
    stale = make_host("stale", age=600,
                      metrics={"memory.free": 1.0, "cpu.percent": 1.0})
    missing = make_host("missing", metrics={"memory.free": 1.0})
    assert weigher.raw_weights([fresh, stale, missing], make_spec()) == \
        [0.0, None, None]


def test_metrics_weigher_max_age_zero_never_expires(conf):
    metrics_conf(conf, "cpu.percent=1.0", max_age=0)
    old = make_host(age=10 ** 7, metrics={"cpu.percent": 5.5})
    assert MetricsWeigher(conf).raw_weight(old, make_spec()) == 5.5


@pytest.mark.parametrize("required", [True, False])
def test_metrics_weigher_required_decides_removal(conf, required):
    metrics_conf(conf, "cpu.percent=1.0", required=required)
    weigher = MetricsWeigher(conf)
    # An unavailable metric never raises: the weigher says None and
    # the scheduler removes the host or ranks it last.
    assert weigher.raw_weight(make_host(), make_spec()) is None
    assert weigher.unavailable_removes_host(make_spec()) is required


def test_metrics_weigher_multiplier(conf):
    weigher = MetricsWeigher(conf)
    assert weigher.multiplier(make_spec()) == 1.0
    metrics_conf(conf, "cpu.percent=1.0", weight_multiplier=-3.0)
    assert weigher.multiplier(make_spec()) == -3.0


# -- ResourcesWeigher -----------------------------------------------------

def test_resources_weigher_applies_to_goals_only(conf):
    weigher = ResourcesWeigher(conf)
    assert not weigher.applies(make_spec())
    assert weigher.applies(make_spec({"resources:cpu.percent": "min"}))
    thresholds_only = make_spec({"resources:network.rx.bps": "<85M"})
    assert thresholds_only.resources[0].threshold == 85e6
    assert not weigher.applies(thresholds_only)
    assert not weigher.unavailable_removes_host(thresholds_only)


def test_resources_weigher_multiplier(conf):
    weigher = ResourcesWeigher(conf)
    spec = make_spec({"resources:cpu.percent": "min"})
    assert weigher.multiplier(spec) == 1.0
    conf.set_override("resources_weight_multiplier", 7.0,
                      "filter_scheduler")
    assert weigher.multiplier(spec) == 7.0


@pytest.mark.parametrize("goal, expected", [
    ("max", [1.0, 0.5, 0.25]),
    ("min", [-1.0, -0.5, -0.25]),
])
def test_resources_weigher_max_and_min(conf, goal, expected):
    hosts = [make_host(n, metrics={"memory.free": v})
             for n, v in (("a", 8 * GIB), ("b", 4 * GIB), ("c", 2 * GIB))]
    spec = make_spec({"resources:memory.free": goal})
    raw = ResourcesWeigher(conf).raw_weights(hosts, spec)
    assert raw == pytest.approx(expected)
    best = max(range(3), key=raw.__getitem__)
    assert hosts[best].host == ("a" if goal == "max" else "c")


def test_resources_weigher_goals_of_different_units(conf):
    """Bytes per second (1e8) and percent (1e1) count alike: each metric
    is scaled by its largest value among the hosts first."""
    hosts = [
        make_host("a", metrics={"network.rx.bps": 100e6,
                                "cpu.percent": 80.0}),
        make_host("b", metrics={"network.rx.bps": 50e6,
                                "cpu.percent": 10.0}),
        make_host("c", metrics={"network.rx.bps": 10e6,
                                "cpu.percent": 60.0}),
    ]
    spec = make_spec({"resources:network.rx.bps": "min",
                      "resources:cpu.percent": "min"})
    raw = ResourcesWeigher(conf).raw_weights(hosts, spec)
    assert raw == pytest.approx([-1.0 - 1.0, -0.5 - 0.125, -0.1 - 0.75])
    # Unscaled, the bps goal alone would decide (c); scaled, b's low CPU
    # makes up for its traffic.
    unscaled = [-h.metrics["network.rx.bps"].value
                - h.metrics["cpu.percent"].value for h in hosts]
    assert max(range(3), key=unscaled.__getitem__) == 2
    assert max(range(3), key=raw.__getitem__) == 1


def test_resources_weigher_max_and_min_together(conf):
    hosts = [
        make_host("a", metrics={"memory.free": 4 * GIB,
                                "cpu.percent": 50.0}),
        make_host("b", metrics={"memory.free": 2 * GIB,
                                "cpu.percent": 10.0}),
    ]
    spec = make_spec({"resources:memory.free": "max",
                      "resources:cpu.percent": "min"})
    assert ResourcesWeigher(conf).raw_weights(hosts, spec) == \
        pytest.approx([1.0 - 1.0, 0.5 - 0.2])


def test_resources_weigher_missing_metric_is_none_not_removed(conf):
    spec = make_spec({"resources:memory.free": "max",
                      "resources:cpu.percent": "min"})
    full = [make_host("a", metrics={"memory.free": 4.0, "cpu.percent": 5.0}),
            make_host("b", metrics={"memory.free": 2.0, "cpu.percent": 1.0})]
    # A huge memory.free on a host without cpu.percent must not shrink
    # the others' scaled memory.
    partial = make_host("p", metrics={"memory.free": 1e6})
    stale = make_host("s", age=10 ** 6,
                      metrics={"memory.free": 8.0, "cpu.percent": 0.0})
    weigher = ResourcesWeigher(conf)
    assert not weigher.unavailable_removes_host(spec)
    without = weigher.raw_weights(full, spec)
    with_unavailable = weigher.raw_weights([partial, *full, stale], spec)
    assert with_unavailable == [None, *without, None]
    assert without == pytest.approx([0.0, 0.5 - 0.2])
    for mode in ("minmax", "rank", "hardmax", "none"):
        assert normalize(mode, with_unavailable)[1:3] == \
            normalize(mode, without)


def test_resources_weigher_all_zero_and_single_host(conf):
    spec = make_spec({"resources:network.tx.bps": "min"})
    weigher = ResourcesWeigher(conf)
    idle = [make_host(n, metrics={"network.tx.bps": 0}) for n in "ab"]
    assert weigher.raw_weights(idle, spec) == [0.0, 0.0]
    one = make_host("one", metrics={"network.tx.bps": 300.0})
    assert weigher.raw_weight(one, spec) == -1.0
    assert weigher.raw_weight(make_host("none"), spec) is None


def test_resources_weigher_ignores_thresholds(conf):
    spec = make_spec({"resources:cpu.percent": "min",
                      "resources:network.rx.bps": "<85M"})
    hosts = [make_host("a", metrics={"cpu.percent": 50.0}),
             make_host("b", metrics={"cpu.percent": 25.0})]
    assert ResourcesWeigher(conf).raw_weights(hosts, spec) == [-1.0, -0.5]


def test_resources_weigher_counts_pending_claims(conf):
    spec = make_spec({"resources:memory.free": "max"})
    a = make_host("a", memory_mb=8192, metrics={"memory.free": 4 * GIB})
    b = make_host("b", memory_mb=8192, metrics={"memory.free": 3 * GIB})
    a.consume(vcpus=0, memory_mb=2048, disk_gb=0)
    assert ResourcesWeigher(conf).raw_weights([a, b], spec) == \
        pytest.approx([2 / 3, 1.0])
