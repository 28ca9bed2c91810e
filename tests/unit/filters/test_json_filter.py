"""scheduler.filters.json_filter.JsonFilter."""

import json
import pathlib
import re

import pytest

from scheduler.filters import Rejection
from scheduler.filters import json_filter
from scheduler.hosts.state import MIB
from scheduler.request.extra_specs import InvalidExtraSpec
from tests.fakes import make_host
from tests.unit.filters.fakes import CPU_INFO
from tests.unit.filters.fakes import MAX_AGE
from tests.unit.filters.fakes import spec_for

pytestmark = pytest.mark.usefixtures("frozen_now")

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
    return jsonf.reject(host, spec_for(hints={"query": query})) is None


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
    rejection = jsonf.reject(json_host, spec_for(hints={"query": [
        "and", [">", "$free_ram_mb", 1e6], ["<", "$metrics.disk.iops", 5],
        ["<", "$free_ram_mb", 0]]}))
    assert rejection == Rejection("query not satisfied",
                                  "free_ram_mb=12288.0, metrics.disk.iops="
                                  "None")


@pytest.mark.parametrize("hints", [{}, {"query": None}, {"query": ""},
                                   {"query": "  "}, {"query": []},
                                   {"query": "[]"}])
def test_json_filter_without_query_passes(jsonf, json_host, hints):
    spec = spec_for(hints=hints)
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
    spec = spec_for(hints={"query": query})
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
