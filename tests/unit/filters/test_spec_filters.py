"""Unit tests of the filters driven by extra specs, metrics and hints:
ComputeCapabilitiesFilter, ResourcesThresholdFilter, MetricsFilter and
JsonFilter."""


import pytest

from scheduler.filters import Rejection
from scheduler.filters import compute_capabilities_filter
from scheduler.filters import metrics_filter
from scheduler.filters import resources_threshold_filter
from scheduler.hosts.state import MIB
from scheduler.request.extra_specs import InvalidExtraSpec
from scheduler.request.spec import RequestSpec
from tests.fakes import make_host
from tests.unit.filters.fakes import CPU_INFO
from tests.unit.filters.fakes import MAX_AGE
from tests.unit.filters.fakes import spec_for

pytestmark = pytest.mark.usefixtures("frozen_now")





# --- ComputeCapabilitiesFilter -------------------------------------------


@pytest.fixture
def capabilities(conf):
    return compute_capabilities_filter.ComputeCapabilitiesFilter(conf)


@pytest.fixture
def cap_host():
    return make_host(cpu_info=CPU_INFO, cluster="c1",
                     availability_zone="az1",
                     networks=frozenset({"public", "storage"}))


@pytest.mark.parametrize(("key", "value", "passes"), [
    ("capabilities:cpu_info:arch", "s== x86_64", True),
    ("capabilities:cpu_info:arch", "s== aarch64", False),
    ("capabilities:cpu_info:arch", "x86_64", True),
    ("capabilities:cpu_info:arch", "<or> aarch64 <or> x86_64", True),
    ("capabilities:cpu_info:vendor", "s!= AMD", True),
    ("capabilities:cpu_info:model", "<in> Gold", True),
    ("capabilities:cpu_info:model", "<in> Platinum", False),
    ("capabilities:cpu_info:features", "<in> avx2", True),
    ("capabilities:cpu_info:features", "avx2", True),
    ("capabilities:cpu_info:features", "<all-in> avx avx2", True),
    ("capabilities:cpu_info:features", "<all-in> avx avx512f", False),
    ("capabilities:cpu_info:topology:cores", ">= 16", True),
    ("capabilities:cpu_info:topology:cores", "= 32", False),
    ("capabilities:cpu_info:topology:cores", "== 20", True),
    ("capabilities:cpu_info:topology:sockets", "<= 1", False),
    ("capabilities:vcpus", "= 4", True),
    ("capabilities:vcpus", "= 16", False),
    ("capabilities:vcpus", "!= 8", False),
    ("capabilities:free_ram_mb", ">= 16384", True),
    ("capabilities:hypervisor_hostname", "node-1.local", True),
    ("capabilities:hypervisor_hostname", "node-2.local", False),
    ("capabilities:nodename", "s== node-1.local", True),
    ("capabilities:host", "node-1", True),
    ("capabilities:availability_zone", "az1", True),
    ("capabilities:availability_zone", "az2", False),
    ("capabilities:cluster", "<or> c1 <or> c2", True),
    ("capabilities:networks", "<all-in> public storage", True),
    ("capabilities:networks", "<in> private", False),
    ("capabilities:vcpus_total", ">= 8", True),
    # Unscoped keys are capabilities too (Nova).
    ("vcpus", ">= 8", True),
    ("vcpus", ">= 9", False),
    # A host attribute that is not a number fails numeric operators.
    ("capabilities:cpu_info:arch", ">= 1", False),
    # Other scopes are not this filter's business.
    ("hw:cpu_policy", "dedicated", True),
    ("resources:cpu.percent", "<50", True),
])
def test_capabilities(capabilities, cap_host, key, value, passes):
    rejection = capabilities.reject(cap_host, spec_for({key: value}))
    assert (rejection is None) is passes


def test_capabilities_rejection_reason_and_detail(capabilities, cap_host):
    rejection = capabilities.reject(cap_host, spec_for(
        {"capabilities:cpu_info:arch": "s== aarch64"}))
    assert rejection == Rejection(
        "capabilities:cpu_info:arch s== aarch64",
        "host has cpu_info:arch='x86_64'")


@pytest.mark.parametrize(("key", "attribute"), [
    ("capabilities:cpu_info:vendor", "cpu_info:vendor"),
    ("capabilities:cpu_info:topology:dies", "cpu_info:topology:dies"),
    ("capabilities:cpu_info:arch:bits", "cpu_info:arch:bits"),
    ("capabilities:hypervisor_type", "hypervisor_type"),
    ("capabilities:cluster", "cluster"),
    # Methods and internals are not capabilities.
    ("capabilities:consume", "consume"),
    ("capabilities:__class__", "__class__"),
    ("capabilities:metrics", "metrics"),
])
def test_capabilities_missing_attribute(capabilities, key, attribute):
    host = make_host(cpu_info={"arch": "x86_64", "topology": {"cores": 4}})
    rejection = capabilities.reject(host, spec_for({key: "s== x86_64"}))
    assert rejection == Rejection(f"{key} s== x86_64",
                                  f"host has no {attribute}")


def test_capabilities_reason_is_shared_across_hosts(capabilities):
    spec = spec_for({"capabilities:cpu_info:arch": "s== aarch64"})
    reasons = {capabilities.reject(make_host(f"n{i}", cpu_info={
        "arch": arch}), spec).reason for i, arch in enumerate(
        ["x86_64", "ppc64le"])}
    assert reasons == {"capabilities:cpu_info:arch s== aarch64"}


def test_capabilities_all_must_match(capabilities, cap_host):
    spec = spec_for({"capabilities:cpu_info:arch": "x86_64",
                      "capabilities:vcpus": ">= 64"})
    assert capabilities.reject(cap_host, spec).reason == (
        "capabilities:vcpus >= 64")


def test_capabilities_applies_and_validates(capabilities):
    assert not capabilities.applies(spec_for({"hw:cpu_policy": "x"}))
    assert capabilities.applies(spec_for({"capabilities:vcpus": ">= 1"}))
    capabilities.validate_request(spec_for({"capabilities:vcpus": "= 1"}))
    with pytest.raises(InvalidExtraSpec, match="capabilities:vcpus"):
        capabilities.validate_request(
            spec_for({"capabilities:vcpus": ">= abc"}))


# --- ResourcesThresholdFilter --------------------------------------------


@pytest.fixture
def thresholds(conf):
    return resources_threshold_filter.ResourcesThresholdFilter(conf)


RX_SPEC = {"resources:network.rx.bps": "<85M"}


def test_threshold_passes_below(thresholds):
    host = make_host(metrics={"network.rx.bps": 84e6})
    assert thresholds.reject(host, spec_for(RX_SPEC)) is None


def test_threshold_rejects_above(thresholds):
    host = make_host(metrics={"network.rx.bps": 86e6})
    rejection = thresholds.reject(host, spec_for(RX_SPEC))
    assert rejection.reason == "network.rx.bps<85M"
    assert "86000000" in rejection.detail


def test_threshold_reason_keeps_operator_spelling(thresholds):
    host = make_host(metrics={"network.rx.bps": 86e6})
    spec = spec_for({"resources:network.rx.bps": " >= 100 M"})
    assert thresholds.reject(host, spec).reason == "network.rx.bps>=100M"


def test_threshold_rejects_missing_metric(thresholds):
    host = make_host(metrics={"cpu.percent": 10})
    rejection = thresholds.reject(host, spec_for(RX_SPEC))
    assert rejection.reason == "network.rx.bps unavailable"
    assert "not reported" in rejection.detail


def test_threshold_rejects_stale_metric(thresholds):
    host = make_host(metrics={"network.rx.bps": 1.0}, age=MAX_AGE + 1)
    rejection = thresholds.reject(host, spec_for(RX_SPEC))
    assert rejection.reason == "network.rx.bps unavailable"
    assert f"max_age {MAX_AGE}" in rejection.detail


def test_threshold_accepts_metric_just_within_max_age(thresholds):
    host = make_host(metrics={"network.rx.bps": 1.0}, age=MAX_AGE)
    assert thresholds.reject(host, spec_for(RX_SPEC)) is None


def test_threshold_max_age_zero_never_expires(conf, thresholds):
    conf.set_override("max_age", 0, group="metrics")
    host = make_host(metrics={"network.rx.bps": 1.0}, age=10 * 86400)
    assert thresholds.reject(host, spec_for(RX_SPEC)) is None


def test_threshold_rejects_malformed_metric(thresholds):
    host = make_host(metrics={}, bad_metrics=frozenset({"network.rx.bps"}))
    rejection = thresholds.reject(host, spec_for(RX_SPEC))
    assert rejection.reason == "network.rx.bps unavailable"
    assert "not a number" in rejection.detail


def test_threshold_counts_pending_claims(thresholds):
    spec = spec_for({"resources:memory.free": ">=1.5Gi"})
    free = 2 * 1024 * MIB
    assert thresholds.reject(make_host(metrics={"memory.free": free}),
                             spec) is None
    host = make_host(metrics={"memory.free": free}, memory_mb_pending=1024)
    rejection = thresholds.reject(host, spec)
    assert rejection.reason == "memory.free>=1.5Gi"
    assert str(1024 * MIB) in rejection.detail
    assert "pending" in rejection.detail


def test_threshold_ignores_goals(thresholds):
    spec = spec_for({"resources:cpu.percent": "max"})
    assert not thresholds.applies(spec)
    assert thresholds.reject(make_host(), spec) is None


def test_threshold_every_spec_must_hold(thresholds):
    spec = spec_for({"resources:network.rx.bps": "<85M",
                      "resources:cpu.percent": "<=50",
                      "resources:memory.free": "max"})
    assert thresholds.applies(spec)
    ok = {"network.rx.bps": 1e6, "cpu.percent": 50}
    assert thresholds.reject(make_host(metrics=ok), spec) is None
    busy = {"network.rx.bps": 1e6, "cpu.percent": 50.5}
    assert thresholds.reject(make_host(metrics=busy), spec).reason == (
        "cpu.percent<=50")


def test_threshold_uses_configured_scope(conf, thresholds):
    spec = RequestSpec.from_dict(
        {"flavor": {"extra_specs": {"metrics:cpu.percent": "<10"}}},
        scope="metrics")
    assert thresholds.reject(make_host(metrics={"cpu.percent": 20}),
                             spec).reason == "cpu.percent<10"


# --- MetricsFilter -------------------------------------------------------


@pytest.fixture
def metrics(conf):
    conf.set_override("weight_setting", "cpu.percent=-1.0, memory.free=1.0",
                      group="metrics")
    return metrics_filter.MetricsFilter(conf)


def test_metrics_filter_passes_fresh_metrics(metrics):
    host = make_host(metrics={"cpu.percent": 5, "memory.free": 1e9})
    assert metrics.applies(spec_for())
    assert metrics.reject(host, spec_for()) is None


def test_metrics_filter_rejects_missing(metrics):
    rejection = metrics.reject(make_host(metrics={"cpu.percent": 5}),
                               spec_for())
    assert rejection.reason == "metric memory.free unavailable"
    assert "not reported" in rejection.detail


def test_metrics_filter_rejects_stale(metrics):
    host = make_host(metrics={"cpu.percent": 5, "memory.free": 1e9},
                     age=MAX_AGE + 60)
    rejection = metrics.reject(host, spec_for())
    assert rejection.reason == "metric cpu.percent unavailable"
    assert f"{MAX_AGE + 60} s old" in rejection.detail


def test_metrics_filter_rejects_bad(metrics):
    host = make_host(metrics={"cpu.percent": 5, "memory.free": 1e9},
                     bad_metrics=frozenset({"memory.free"}))
    rejection = metrics.reject(host, spec_for())
    assert rejection.reason == "metric memory.free unavailable"
    assert "not a number" in rejection.detail


def test_metrics_filter_without_weight_setting(conf):
    host_filter = metrics_filter.MetricsFilter(conf)
    assert not host_filter.applies(spec_for())
    assert host_filter.reject(make_host(), spec_for()) is None
