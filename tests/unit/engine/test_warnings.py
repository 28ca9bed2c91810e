"""Extra-spec typos (issue 14): a misspelt scope or an unscoped key no
plugin reads is warned about once (explain output and the log); a
misspelt required metric is named in the NoValidHost summary; malformed
operators fail the request naming the key, whatever the scope."""

import logging

import pytest

from scheduler import exception
from scheduler.cmd import output
from scheduler.engine import warnings as request_warnings
from scheduler.request import extra_specs
from tests.unit.engine.fakes import host
from tests.unit.engine.fakes import scheduler
from tests.unit.engine.fakes import spec

KNOWN = ("resources", "capabilities")


@pytest.mark.parametrize(("key", "meant"), [
    ("resource:cpu.percent", "resources"),
    ("Resources:cpu.percent", "resources"),
    ("resourses:cpu.percent", "resources"),
    ("capabilites:cpu_info:arch", "capabilities"),
    ("capability:vcpus", "capabilities"),
    ("CAPABILITIES:vcpus", "capabilities"),
])
def test_misspelt_scope_found(key, meant):
    assert extra_specs.misspelt_scopes({key: "<50"}, KNOWN) == [(key, meant)]


@pytest.mark.parametrize("key", [
    "resources:cpu.percent", "capabilities:vcpus", "vcpus", "XXYY",
    # Nova's own scopes and granular request groups are not typos.
    "hw:cpu_policy", "quota:cpu_shares", "trait:HW_CPU_X86_AVX2",
    "resources1:VCPU", "resources_gpu:VGPU",
    "aggregate_instance_extra_specs:x",
    "pci_passthrough:alias", "hw_rng:allowed", "os:secure_boot",
])
def test_other_scopes_are_not_typos(key):
    assert extra_specs.misspelt_scopes({key: "1"}, KNOWN) == []


def test_misspelt_scope_follows_configured_scope():
    specs = {"metric:cpu.percent": "<50", "resource:cpu.percent": "<50"}
    assert extra_specs.misspelt_scopes(specs, ("metrics", "capabilities")) \
        == [("metric:cpu.percent", "metrics")]


def test_explain_warns_once_per_key_and_logs_once(conf, caplog):
    request_warnings._logged.clear()
    sched = scheduler(conf, enabled_filters=[
        "ComputeFilter", "RamFilter", "ComputeCapabilitiesFilter"])
    request = spec(extra_specs={"resource:cpu.percent": "<50",
                                "XXYY": "1"})
    hosts = [host("a"), host("b"), host("c")]
    with caplog.at_level(logging.WARNING, "scheduler.engine.warnings"):
        first = sched.explain(request, hosts)
        sched.explain(request, hosts)
        sched.select(request, hosts)
    assert first.selected
    assert first.warnings == [
        "extra spec resource:cpu.percent ignored: the scheduler reads no "
        "scope resource:; did you mean resources:?",
        "extra spec XXYY='1' ignored: without a scope it counts only when "
        "it names a host attribute, as in Nova",
    ]
    assert first.as_dict()["warnings"] == first.warnings
    logged = [r.getMessage() for r in caplog.records]
    assert logged == first.warnings
    # scheduler-manage prints them on stderr, once.
    assert "Warning" not in output.explain(first.as_dict(), "table")


def test_explain_leaves_the_warnings_to_its_caller(conf, caplog):
    request_warnings._logged.clear()
    request = spec(extra_specs={"resource:cpu.percent": "<50"})
    with caplog.at_level(logging.WARNING, "scheduler.engine.warnings"):
        decision = scheduler(conf).explain(request, [host("a")])
    assert len(decision.warnings) == 1
    assert caplog.records == []


def test_a_request_with_1000_unscoped_keys_logs_a_few_lines(
        conf, caplog):
    request_warnings._logged.clear()
    sched = scheduler(conf, enabled_filters=[
        "ComputeFilter", "ComputeCapabilitiesFilter"])
    request = spec(extra_specs={f"key{i}": "1" for i in range(1000)})
    with caplog.at_level(logging.WARNING, "scheduler.engine.warnings"):
        decision = sched.explain(request, [host("a")])
        sched.select(request, [host("a")])
    # Explain lists them all, the log a few and a count of the rest,
    # once: the next request with the same keys logs nothing.
    assert len(decision.warnings) == 1000
    logged = [r.getMessage() for r in caplog.records]
    assert logged[:-1] == decision.warnings[:request_warnings.PER_REQUEST]
    assert logged[-1] == (
        "997 more warning(s) about this request's extra specs not logged; "
        "'scheduler-manage explain' lists them all")


def test_explain_without_typos_has_no_warnings(conf):
    decision = scheduler(conf).explain(
        spec(extra_specs={"resources:cpu.percent": "max",
                          "hw:cpu_policy": "dedicated"}),
        [host("a", metrics={"cpu.percent": 5.0})])
    assert decision.warnings == []
    assert "Warning" not in output.explain(decision.as_dict(), "table")


@pytest.mark.parametrize(("key", "value"), [
    ("capabilities:cpu_info:arch", "s=== x86_64"),
    ("capabilities:cpu_info:arch", "s== "),
    ("vcpus", "=> 4"),
    ("resources:cpu.percent", "=< 50"),
    ("resources:cpu.percent", "<<50"),
])
def test_malformed_operator_in_any_scope_is_invalid_request(
        conf, key, value):
    sched = scheduler(conf, enabled_filters=[
        "ComputeFilter", "ComputeCapabilitiesFilter",
        "ResourcesThresholdFilter"])
    with pytest.raises(exception.InvalidRequest) as info:
        sched.explain(spec(extra_specs={key: value}), [host("a")])
    assert key in str(info.value)


def test_no_valid_host_names_the_missing_required_metric(conf):
    sched = scheduler(conf, weight_setting=[("cpu.percnt", -1.0)],
                      required=True,
                      weight_classes=["RAMWeigher", "MetricsWeigher"])
    hosts = [host(name, metrics={"cpu.percent": 5.0}) for name in "abc"]
    with pytest.raises(exception.NoValidHost) as info:
        sched.select(spec(), hosts)
    assert str(info.value) == (
        "0/3 hosts available: 3 MetricsWeigher (required metric "
        "unavailable: cpu.percnt)")
    results = sched.explain(spec(), hosts).results
    assert {r.detail for r in results} == {"cpu.percnt not reported"}
