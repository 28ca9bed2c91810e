"""Nova's JsonFilter tests (nova/tests/unit/scheduler/filters/
test_json_filters.py), ported to JsonFilter.

``REFUSED`` marks a query the project refuses with the request
(InvalidRequest naming the hint) where Nova evaluated it host by host.
"""

import json

import pytest

from scheduler.exception import InvalidRequest
from scheduler.filters.json_filter import JsonFilter
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import passes

REFUSED = "refused"

RAM_AND_DISK = ["and", [">=", "$free_ram_mb", 1024],
                [">=", "$free_disk_mb", 200 * 1024]]
ROOMY = {"free_ram_mb": 1024, "free_disk_mb": 200 * 1024}
HAPPY_DAY = ["and", "$capabilities.enabled",
             ["=", "$capabilities.opt1", "match"],
             ["or", ["and", ["<", "$free_ram_mb", 30],
                     ["<", "$free_disk_mb", 300]],
              ["and", [">", "$free_ram_mb", 30],
               [">", "$free_disk_mb", 300]]]]


def _operator(op: str, args: list, expected: bool,
              differs: str | None = None) -> Case:
    query = [op, *args]
    return Case(f"test_json_filter_basic_operators[{json.dumps(query)}]",
                expected, request={"query": query}, differs=differs)


CASES = [
    Case("test_json_filter_passes", True, host=ROOMY,
         request={"query": RAM_AND_DISK}),
    Case("test_json_filter_passes_with_no_query", True,
         host={"free_ram_mb": 0, "free_disk_mb": 0}),
    Case("test_json_filter_fails_on_memory", False,
         host={"free_ram_mb": 1023, "free_disk_mb": 200 * 1024},
         request={"query": RAM_AND_DISK}),
    Case("test_json_filter_fails_on_disk", False,
         host={"free_ram_mb": 1024, "free_disk_mb": 200 * 1024 - 1},
         request={"query": RAM_AND_DISK}),
    # $service.disabled and $capabilities.* name nothing a node has.
    Case("test_json_filter_fails_on_service_disabled", REFUSED, host=ROOMY,
         request={"query": [*RAM_AND_DISK, ["not", "$service.disabled"]]},
         differs="json-dialect"),
    Case("test_json_filter_happy_day", REFUSED,
         host={"free_ram_mb": 10, "free_disk_mb": 200},
         request={"query": HAPPY_DAY}, differs="json-dialect"),
    *[_operator(op, args, expected) for op, args, expected in [
        ("=", [1, 1], True), ("=", [1, 2], False),
        ("<", [1, 2], True), ("<", [1, 1], False), ("<", [2, 1], False),
        (">", [2, 1], True), (">", [2, 2], False), (">", [2, 3], False),
        ("<=", [1, 2], True), ("<=", [1, 1], True), ("<=", [2, 1], False),
        (">=", [2, 1], True), (">=", [2, 2], True), (">=", [2, 3], False),
        ("in", [1, 1], True), ("in", [1, 1, 2, 3], True),
        ("in", [4, 1, 2, 3], False),
        ("not", [True], False), ("not", [False], True),
        ("or", [True, False], True), ("or", [False, False], False),
        ("and", [True, True], True), ("and", [False, False], False),
        ("and", [True, False], False),
        ("and", [["or", True, False], [">", 2, 1]], True),
    ]],
    # Nova's "not" flips each of several arguments, then any() of them.
    _operator("not", [True, False, True, False], REFUSED, "json-dialect"),
    _operator("not", [True, True, True], REFUSED, "json-dialect"),
    # Nova raised KeyError while filtering; refused before it here.
    Case("test_json_filter_unknown_operator_raises", REFUSED,
         request={"query": ["!=", 1, 2]}),
    Case("test_json_filter_empty_filters_pass[[]]", True,
         request={"query": []}),
    Case("test_json_filter_empty_filters_pass[{}]", True,
         request={"query": {}}),
    Case("test_json_filter_invalid_num_arguments_fails[nested]", REFUSED,
         request={"query": [">", ["and", ["or", ["not", ["<", [
             ">=", ["<=", ["in"]]]]]]]]},
         differs="json-dialect"),
    Case("test_json_filter_invalid_num_arguments_fails[one argument]",
         REFUSED, request={"query": [">", 1]}, differs="json-dialect"),
    Case("test_json_filter_unknown_variable_ignored[$........]", REFUSED,
         request={"query": ["=", "$........", 1, 1]},
         differs="json-dialect"),
    Case("test_json_filter_unknown_variable_ignored[$foo]", REFUSED,
         request={"query": ["=", "$foo", 2, 2]}, differs="json-dialect"),
]


def _run(host: dict, query: object) -> bool | str:
    hints = {} if query is None else {"query": json.dumps(query)}
    request = nova_request(memory_mb=1024, root_gb=200, hints=hints)
    try:
        return passes(JsonFilter, nova_host(**host), request)
    except InvalidRequest as e:
        assert "query" in str(e)
        return REFUSED


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_json_filter(case):
    assert _run(case.host, case.request.get("query")) == case.expected


@pytest.mark.parametrize(("variable", "value"), [
    # The variables Nova's documentation lists for this filter.
    ("$free_ram_mb", 1536), ("$free_disk_mb", 100 * 1024),
    ("$hypervisor_hostname", "node1"), ("$total_usable_ram_mb", 2048),
    ("$vcpus_total", 8), ("$vcpus_used", 3),
])
def test_nova_documented_variables(variable, value):
    host = {"free_ram_mb": 1536, "total_usable_ram_mb": 2048,
            "free_disk_mb": 100 * 1024, "vcpus_total": 8, "vcpus_used": 3}
    assert _run(host, ["=", variable, value]) is True
    other = value + 1 if isinstance(value, int) else value + "x"
    assert _run(host, ["=", variable, other]) is False
