"""Unit tests of the filters driven by extra specs, metrics and hints:
ComputeCapabilitiesFilter, ResourcesThresholdFilter, MetricsFilter and
JsonFilter."""

import collections.abc
import datetime
import json
import pathlib
import re

import pytest
from oslo_config import cfg

import scheduler.conf
from scheduler.common import clock
from scheduler.filters import Rejection
from scheduler.filters import compute_capabilities_filter
from scheduler.filters import json_filter
from scheduler.filters import metrics_filter
from scheduler.filters import resources_threshold_filter
from scheduler.hosts.state import MIB
from scheduler.request.extra_specs import InvalidExtraSpec
from scheduler.request.spec import RequestSpec
from tests.fakes import make_host

NOW = datetime.datetime(2024, 5, 1, 12, 0, 0)
MAX_AGE = 300


@pytest.fixture
def conf() -> collections.abc.Iterator[cfg.ConfigOpts]:
    conf = cfg.ConfigOpts()
    scheduler.conf.register_opts(conf)
    conf([])
    conf.set_override("max_age", MAX_AGE, group="metrics")
    yield conf
    # The module-level OptGroup objects share their option table between
    # ConfigOpts instances, so an override would outlive this test.
    for name in ("max_age", "weight_setting"):
        conf.clear_override(name, group="metrics")


@pytest.fixture(autouse=True)
def frozen_now(monkeypatch):
    # The filters read the clock per call; pin it so that "fresh" and
    # "stale" do not depend on how fast the test runs.
    monkeypatch.setattr(clock, "utcnow", lambda: NOW)


def make_spec(extra_specs: dict | None = None, hints: dict | None = None,
              **flavor) -> RequestSpec:
    return RequestSpec.from_dict({
        "flavor": {"name": "m1", "vcpus": 1, "memory_mb": 512,
                   "root_gb": 1, "extra_specs": extra_specs or {}, **flavor},
        "scheduler_hints": hints or {},
    })


# --- ComputeCapabilitiesFilter -------------------------------------------

CPU_INFO = {
    "arch": "x86_64",
    "vendor": "Intel",
    "model": "Xeon Gold 6230",
    "features": ["avx", "avx2", "sse4_2"],
    "topology": {"sockets": 2, "cores": 20, "threads": 2},
}


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
    rejection = capabilities.reject(cap_host, make_spec({key: value}))
    assert (rejection is None) is passes


def test_capabilities_rejection_reason_and_detail(capabilities, cap_host):
    rejection = capabilities.reject(cap_host, make_spec(
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
    rejection = capabilities.reject(host, make_spec({key: "s== x86_64"}))
    assert rejection == Rejection(f"{key} s== x86_64",
                                  f"host has no {attribute}")


def test_capabilities_reason_is_shared_across_hosts(capabilities):
    spec = make_spec({"capabilities:cpu_info:arch": "s== aarch64"})
    reasons = {capabilities.reject(make_host(f"n{i}", cpu_info={
        "arch": arch}), spec).reason for i, arch in enumerate(
        ["x86_64", "ppc64le"])}
    assert reasons == {"capabilities:cpu_info:arch s== aarch64"}


def test_capabilities_all_must_match(capabilities, cap_host):
    spec = make_spec({"capabilities:cpu_info:arch": "x86_64",
                      "capabilities:vcpus": ">= 64"})
    assert capabilities.reject(cap_host, spec).reason == (
        "capabilities:vcpus >= 64")


def test_capabilities_applies_and_validates(capabilities):
    assert not capabilities.applies(make_spec({"hw:cpu_policy": "x"}))
    assert capabilities.applies(make_spec({"capabilities:vcpus": ">= 1"}))
    capabilities.validate_request(make_spec({"capabilities:vcpus": "= 1"}))
    with pytest.raises(InvalidExtraSpec, match="capabilities:vcpus"):
        capabilities.validate_request(
            make_spec({"capabilities:vcpus": ">= abc"}))


# --- ResourcesThresholdFilter --------------------------------------------


@pytest.fixture
def thresholds(conf):
    return resources_threshold_filter.ResourcesThresholdFilter(conf)


RX_SPEC = {"resources:network.rx.bps": "<85M"}


def test_threshold_passes_below(thresholds):
    host = make_host(metrics={"network.rx.bps": 84e6})
    assert thresholds.reject(host, make_spec(RX_SPEC)) is None


def test_threshold_rejects_above(thresholds):
    host = make_host(metrics={"network.rx.bps": 86e6})
    rejection = thresholds.reject(host, make_spec(RX_SPEC))
    assert rejection.reason == "network.rx.bps<85M"
    assert "86000000" in rejection.detail


def test_threshold_reason_keeps_operator_spelling(thresholds):
    host = make_host(metrics={"network.rx.bps": 86e6})
    spec = make_spec({"resources:network.rx.bps": " >= 100 M"})
    assert thresholds.reject(host, spec).reason == "network.rx.bps>=100M"


def test_threshold_rejects_missing_metric(thresholds):
    host = make_host(metrics={"cpu.percent": 10})
    rejection = thresholds.reject(host, make_spec(RX_SPEC))
    assert rejection.reason == "network.rx.bps unavailable"
    assert "not reported" in rejection.detail


def test_threshold_rejects_stale_metric(thresholds):
    host = make_host(metrics={"network.rx.bps": 1.0}, age=MAX_AGE + 1)
    rejection = thresholds.reject(host, make_spec(RX_SPEC))
    assert rejection.reason == "network.rx.bps unavailable"
    assert f"max_age {MAX_AGE}" in rejection.detail


def test_threshold_accepts_metric_just_within_max_age(thresholds):
    host = make_host(metrics={"network.rx.bps": 1.0}, age=MAX_AGE)
    assert thresholds.reject(host, make_spec(RX_SPEC)) is None


def test_threshold_max_age_zero_never_expires(conf, thresholds):
    conf.set_override("max_age", 0, group="metrics")
    host = make_host(metrics={"network.rx.bps": 1.0}, age=10 * 86400)
    assert thresholds.reject(host, make_spec(RX_SPEC)) is None


def test_threshold_rejects_malformed_metric(thresholds):
    host = make_host(metrics={}, bad_metrics=frozenset({"network.rx.bps"}))
    rejection = thresholds.reject(host, make_spec(RX_SPEC))
    assert rejection.reason == "network.rx.bps unavailable"
    assert "not a number" in rejection.detail


def test_threshold_counts_pending_claims(thresholds):
    spec = make_spec({"resources:memory.free": ">=1.5Gi"})
    free = 2 * 1024 * MIB
    assert thresholds.reject(make_host(metrics={"memory.free": free}),
                             spec) is None
    host = make_host(metrics={"memory.free": free}, memory_mb_pending=1024)
    rejection = thresholds.reject(host, spec)
    assert rejection.reason == "memory.free>=1.5Gi"
    assert str(1024 * MIB) in rejection.detail
    assert "pending" in rejection.detail


def test_threshold_ignores_goals(thresholds):
    spec = make_spec({"resources:cpu.percent": "max"})
    assert not thresholds.applies(spec)
    assert thresholds.reject(make_host(), spec) is None


def test_threshold_every_spec_must_hold(thresholds):
    spec = make_spec({"resources:network.rx.bps": "<85M",
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
    assert metrics.applies(make_spec())
    assert metrics.reject(host, make_spec()) is None


def test_metrics_filter_rejects_missing(metrics):
    rejection = metrics.reject(make_host(metrics={"cpu.percent": 5}),
                               make_spec())
    assert rejection.reason == "metric memory.free unavailable"
    assert "not reported" in rejection.detail


def test_metrics_filter_rejects_stale(metrics):
    host = make_host(metrics={"cpu.percent": 5, "memory.free": 1e9},
                     age=MAX_AGE + 60)
    rejection = metrics.reject(host, make_spec())
    assert rejection.reason == "metric cpu.percent unavailable"
    assert f"{MAX_AGE + 60} s old" in rejection.detail


def test_metrics_filter_rejects_bad(metrics):
    host = make_host(metrics={"cpu.percent": 5, "memory.free": 1e9},
                     bad_metrics=frozenset({"memory.free"}))
    rejection = metrics.reject(host, make_spec())
    assert rejection.reason == "metric memory.free unavailable"
    assert "not a number" in rejection.detail


def test_metrics_filter_without_weight_setting(conf):
    host_filter = metrics_filter.MetricsFilter(conf)
    assert not host_filter.applies(make_spec())
    assert host_filter.reject(make_host(), make_spec()) is None


# --- JsonFilter ----------------------------------------------------------


@pytest.fixture
def jsonf(conf):
    return json_filter.JsonFilter(conf)


@pytest.fixture
def json_host():
    return make_host(
        "node-7", metrics={"cpu.percent": 30, "memory.free": 8e9},
        cluster="c1", availability_zone="az1", cpu_info=CPU_INFO,
        memory_mb_claimed=4096, vcpus_claimed=2, disk_gb_claimed=40,
        instances={"i-1", "i-2"})


def run(jsonf, host, query) -> bool:
    return jsonf.reject(host, make_spec(hints={"query": query})) is None


@pytest.mark.parametrize(("query", "passes"), [
    ([">=", "$free_ram_mb", 12288], True),
    ([">=", "$free_ram_mb", 12289], False),
    (["=", "$free_disk_gb", 60], True),
    (["<", "$free_vcpus", 6], False),
    (["<=", "$free_vcpus", 6], True),
    ([">", "$vcpus", 4], True),
    (["=", "$memory_mb", 16384], True),
    (["=", "$host", "node-7"], True),
    (["=", "$nodename", "node-7.local"], True),
    (["=", "$hypervisor_hostname", "node-7.local"], True),
    (["in", "$cluster", "c0", "c1"], True),
    (["in", "$availability_zone", "az2", "az3"], False),
    (["=", "$num_instances", 2], True),
    (["=", "$cpu_info.arch", "x86_64"], True),
    ([">=", "$cpu_info.topology.cores", 16], True),
    (["=", "$cpu_info.topology.dies", 1], False),
    (["<", "$metrics.cpu.percent", 50], True),
    (["<", "$metrics.cpu.percent", 30], False),
    ([">=", "$metrics.memory.free", 7.5e9], True),
    # Chained comparisons, as Nova.
    (["<", 10, "$metrics.cpu.percent", 50], True),
    (["<", 40, "$metrics.cpu.percent", 50], False),
    (["=", "$vcpus", 8, 8.0], True),
    # A missing metric fails every comparison, even negated ones.
    (["<", "$metrics.network.rx.bps", 1e12], False),
    ([">=", "$metrics.network.rx.bps", 0], False),
    (["=", "$metrics.network.rx.bps", "$metrics.disk.iops"], False),
    (["in", "$metrics.network.rx.bps", 0, 1], False),
    (["in", "$metrics.network.rx.bps", "$metrics.disk.iops"], False),
    (["not", ["<", "$metrics.network.rx.bps", 1]], True),
    # Mismatched types do not compare.
    (["<", "$host", 5], False),
    (["=", "$vcpus", "8"], False),
    # Boolean structure.
    (["and", [">", "$free_ram_mb", 1024], ["=", "$cluster", "c1"]], True),
    (["and", [">", "$free_ram_mb", 1024], ["=", "$cluster", "c2"]], False),
    (["or", ["=", "$cluster", "c2"], ["=", "$host", "node-7"]], True),
    (["or", ["=", "$cluster", "c2"], ["=", "$host", "node-8"]], False),
    (["not", ["=", "$cluster", "c2"]], True),
    (["not", ["=", "$cluster", "c1"]], False),
    (["and",
      ["or", ["=", "$cpu_info.arch", "aarch64"],
             ["not", ["<", "$free_vcpus", 4]]],
      ["not", ["or", ["in", "$host", "node-1", "node-2"],
                     [">", "$metrics.cpu.percent", 90]]]], True),
    (["and",
      ["or", ["=", "$cpu_info.arch", "aarch64"],
             ["not", ["<", "$free_vcpus", 4]]],
      ["not", ["or", ["in", "$host", "node-1", "node-7"],
                     [">", "$metrics.cpu.percent", 90]]]], False),
    (["and", True], True),
    (["or", False], False),
])
def test_json_filter(jsonf, json_host, query, passes):
    assert run(jsonf, json_host, query) is passes
    assert run(jsonf, json_host, json.dumps(query)) is passes


def test_json_filter_metrics_are_pending_adjusted(jsonf):
    host = make_host(metrics={"memory.free": 2 * 1024 * MIB},
                     memory_mb_pending=1024)
    query = [">=", "$metrics.memory.free", 1.5 * 1024 * MIB]
    assert not run(jsonf, host, query)
    assert run(jsonf, host, ["=", "$metrics.memory.free", 1024 * MIB])


def test_json_filter_stale_metric_is_unknown(jsonf):
    host = make_host(metrics={"cpu.percent": 5}, age=MAX_AGE + 1)
    assert not run(jsonf, host, ["<", "$metrics.cpu.percent", 50])


def test_json_filter_rejection_shows_the_host_values(jsonf, json_host):
    rejection = jsonf.reject(json_host, make_spec(hints={"query": [
        "and", [">", "$free_ram_mb", 1e6], ["<", "$metrics.disk.iops", 5],
        ["<", "$free_ram_mb", 0]]}))
    assert rejection == Rejection("query not satisfied",
                                  "free_ram_mb=12288.0, metrics.disk.iops="
                                  "None")


@pytest.mark.parametrize("hints", [{}, {"query": None}, {"query": ""},
                                   {"query": "  "}, {"query": []},
                                   {"query": "[]"}])
def test_json_filter_without_query_passes(jsonf, json_host, hints):
    spec = make_spec(hints=hints)
    assert not jsonf.applies(spec)
    jsonf.validate_request(spec)
    assert jsonf.reject(json_host, spec) is None


@pytest.mark.parametrize("query", [
    "__import__('os')",
    "__import__('os').system('false')",
    "[\"=\", \"$host\", __import__('os')]",
    "not json",
    "{\"=\": 1}",
    "\"$host\"",
    "42",
    "[\">\", \"$vcpus\", NaN]",
    "[\">\", \"$vcpus\", Infinity]",
    "[" * 100000,
    ["eval", "1"],
    ["__import__", "os"],
    ["exec", "print(1)"],
    [">>", "$vcpus", 1],
    [1, 2],
    [["=", 1, 1]],
    ["=", "$vcpus"],
    ["in", "$host"],
    ["not"],
    ["not", True, False],
    ["and"],
    ["=", "$no_such_variable", 1],
    ["=", "$__class__", 1],
    ["=", "$consume", 1],
    ["=", "$metrics.Bad Name", 1],
    ["=", "$metrics.", 1],
    ["=", "$cpu_info", 1],
    ["=", "$cpu_info..arch", 1],
    ["=", "$vcpus", None],
    ["=", "$vcpus", {"a": 1}],
    ["=", "$vcpus", float("nan")],
    ["=", "$vcpus", ["and"]],
    ["in", "$host", ["a", "b"]],
    ["and", ["or", ["not", ["bogus"]]]],
    {"op": "="},
    42,
])
def test_json_filter_rejects_malformed_queries(jsonf, json_host, query):
    spec = make_spec(hints={"query": query})
    with pytest.raises(json_filter.InvalidQuery) as info:
        jsonf.validate_request(spec)
    error = info.value
    assert isinstance(error, InvalidExtraSpec)
    assert error.key == "query"
    assert "query" in str(error)
    with pytest.raises(json_filter.InvalidQuery):
        json_filter.validate_query(query)


def test_json_filter_never_evaluates_python(jsonf, json_host, monkeypatch):
    calls = []
    monkeypatch.setattr("builtins.__import__", lambda *a, **k: calls.append(
        a) or pytest.fail("import during query evaluation"))
    for query in ("__import__('os')", ["=", "__import__('os')", 1]):
        try:
            passed = run(jsonf, json_host, query)
        except json_filter.InvalidQuery:
            continue
        # A string argument is a literal, never code.
        assert passed is False
    assert calls == []


def test_json_filter_depth_limit(jsonf, json_host):
    query: list = ["=", 1, 1]
    for _ in range(json_filter.MAX_DEPTH - 1):
        query = ["not", query]
    assert json_filter.validate_query(query) is not None
    too_deep: list = ["=", 1, 1]
    for _ in range(json_filter.MAX_DEPTH):
        too_deep = ["not", too_deep]
    with pytest.raises(json_filter.InvalidQuery, match="deeper"):
        json_filter.validate_query(too_deep)


def test_json_filter_error_message_names_the_problem():
    with pytest.raises(json_filter.InvalidQuery) as info:
        json_filter.validate_query('[">>", "$vcpus", 1]')
    assert str(info.value) == (
        "invalid scheduler hint query=[\">>\", \"$vcpus\", 1]: unknown "
        "operator '>>' (expected one of =, <, >, <=, >=, in, not, or, and)")


def test_json_filter_source_has_no_dynamic_evaluation():
    source = pathlib.Path(json_filter.__file__).read_text()
    assert not re.search(r"\b(eval|exec|compile|__import__)\(", source)


def test_validate_query_lists_the_variables_read():
    query = json_filter.validate_query(
        '["and", ["<", "$metrics.cpu.percent", 50], '
        '[">", "$free_ram_mb", "$metrics.cpu.percent"]]')
    assert [v.name for v in query.variables] == [
        "metrics.cpu.percent", "free_ram_mb"]
