"""scheduler.request.validation: where jsonschema-rs and jsonschema could
read a request differently, the fast check refuses and jsonschema
decides. The whole schema's rejections are tested through
SchedulerManager (over SQLite), and the fast check is fuzzed against
jsonschema."""

import decimal
import enum
import time
import uuid

import hypothesis
import jsonschema
import jsonschema_rs
import pytest
from hypothesis import strategies as st

from scheduler import exception
from scheduler.db import models
from scheduler.filters import json_filter
from scheduler.request import schema as schema_mod
from scheduler.request import validation
from scheduler.request import values as request_values
from tests.fakes import add_node
from tests.fakes import allocations
from tests.fakes import spec
from tests.fakes import uuids

UUID = "6f1b6c3e-0d1f-4b8e-9b1a-2f1e3c4d5e6f"


class Policy(enum.Enum):
    AFFINITY = "affinity"


def jsonschema_valid(instance: object, schema: dict | None = None) -> bool:
    return jsonschema.Draft202012Validator(
        schema or schema_mod.request_spec_schema(),
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).is_valid(instance)


@pytest.mark.parametrize("request_spec, message", [
    # jsonschema-rs reads a tuple as an array, an Enum member as its
    # value and a Decimal as a number; the published schema does not.
    (spec(ignore_hosts=("a",)),
     "request_spec.ignore_hosts: ('a',) is not of type 'array' or 'null'"),
    (spec(scheduler_hints={"same_host": (UUID,)}),
     "request_spec.scheduler_hints.same_host: "),
    (spec(scheduler_hints={"group_policy": Policy.AFFINITY}),
     "request_spec.scheduler_hints.group_policy: <Policy.AFFINITY: "),
    ({"flavor": {"vcpus": decimal.Decimal(1), "memory_mb": 1,
                 "root_gb": 1}},
     "request_spec.flavor.vcpus: Decimal('1') is not of type 'integer'"),
])
def test_python_only_values_are_left_to_jsonschema(request_spec, message):
    spec_checker, _ = validation._checkers()
    assert spec_checker.compiled.is_valid(request_spec)
    assert not jsonschema_valid(request_spec)
    assert spec_checker.fast(request_spec) is False
    with pytest.raises(exception.InvalidRequest) as error:
        validation.validate_request(request_spec)
    assert str(error.value).startswith(message)


def test_values_jsonschema_rs_cannot_read_are_left_to_jsonschema():
    spec_checker, _ = validation._checkers()
    # Not a str key: jsonschema-rs raises, jsonschema accepts it.
    odd = spec()
    odd["flavor"]["extra_specs"] = {1: "a"}
    assert spec_checker.fast(odd) is False
    assert jsonschema_valid(odd)
    assert validation.validate_request(odd)[0]["flavor"] == odd["flavor"]


_UUID_CHARS = "0123456789abcdefABCDEF-_+ {}xurn:g"


@st.composite
def uuid_like(draw) -> str:
    """Strings near a uuid: a canonical one with a few characters
    replaced, inserted or removed, or any text of its alphabet."""
    if draw(st.booleans()):
        return draw(st.text(_UUID_CHARS, min_size=30, max_size=40))
    text = list(str(draw(st.uuids())))
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.integers(0, len(text)))
        what = draw(st.sampled_from(("replace", "insert", "remove")))
        char = draw(st.sampled_from(_UUID_CHARS))
        if what == "insert":
            text.insert(where, char)
        elif text and where < len(text):
            if what == "replace":
                text[where] = char
            else:
                del text[where]
    return "".join(text)


@hypothesis.settings(max_examples=1000, deadline=None)
@hypothesis.given(uuid_like())
def test_uuid_format_is_never_laxer_than_jsonschemas(text):
    """jsonschema-rs's ``uuid`` format accepts only what jsonschema's
    does (jsonschema's also takes ``int(text, 16)``'s liberties, a ``_``
    between digits or a sign, which the fast check then leaves to it)."""
    schema = schema_mod.request_spec_schema()["$defs"]["uuid"]
    fast = jsonschema_rs.Draft202012Validator(
        schema, validate_formats=True).is_valid(text)
    assert not fast or jsonschema_valid(text, schema)
    _, uuids_checker = validation._checkers()
    if not uuids_checker.fast([text]):
        return
    assert jsonschema_valid([text], schema_mod.instance_uuids_schema())


def test_canonical_uuids_take_the_fast_path():
    _, uuids_checker = validation._checkers()
    assert uuids_checker.fast([UUID, UUID.upper()])
    assert not uuids_checker.fast([UUID, UUID])  # uniqueItems


def test_query_depth_is_json_filters():
    assert validation.MAX_QUERY_DEPTH == json_filter.MAX_DEPTH


def test_release_argument_is_checked():
    validation.check_instance_uuid(UUID)
    with pytest.raises(exception.InvalidRequest,
                       match="instance_uuid: 'x' is not a 'uuid'"):
        validation.check_instance_uuid("x")
    with pytest.raises(exception.InvalidRequest,
                       match="instance_uuid: 3 is not of type 'string'"):
        validation.check_instance_uuid(3)


_any_text = st.text(st.characters(codec=None, exclude_categories=()),
                    max_size=4) | st.sampled_from(["a\0b", "x\ud800y", "é"])
_leaves = (st.none() | st.booleans() | st.integers() | st.floats()
           | _any_text | st.sampled_from([(), ("a",), Policy.AFFINITY,
                                          decimal.Decimal(1)]))
_trees = st.recursive(_leaves, lambda children: st.lists(
    children, max_size=3) | st.dictionaries(
        _any_text | st.integers(), children, max_size=3), max_leaves=10)


@hypothesis.settings(max_examples=500, deadline=None)
@hypothesis.given(_trees)
def test_scan_agrees_with_request_values(value):
    """Where the one walk of a request says it is decoded JSON, it also
    says what request_values.check would (which then need not walk)."""
    decoded_json, clean = validation._scan(value)
    if not decoded_json:
        return
    try:
        request_values.check(value, "request_spec")
    except exception.InvalidRequest:
        assert not clean
    else:
        assert clean


@pytest.mark.parametrize("request_spec, message", [
    (spec(ignore_hosts=["h"] * 100000),
     "request_spec.ignore_hosts: 100000 items, at most 1000 allowed"),
    (spec(scheduler_hints={"query": "x" * 70000}),
     "request_spec.scheduler_hints.query: 'xxxxxxxx"),
    (spec(image={"properties": {f"k{i}": 1 for i in range(40000)}}),
     "request_spec.image.properties: 40000 keys, at most 1000 allowed"),
])
def test_a_flood_is_left_to_jsonschema_unread(request_spec, message):
    """Larger than any valid request: the fast check does not read it
    whole (nor convert it), jsonschema refuses it at its first oversized
    value."""
    assert validation._scan(request_spec) == (False, False)
    with pytest.raises(exception.InvalidRequest) as error:
        validation.validate_request(request_spec)
    assert str(error.value).startswith(message)


# Validation

FLAVOR = {"vcpus": 1, "memory_mb": 512, "root_gb": 1}


#: Requests the schema refuses, and the start of each refusal's message.
SCHEMA_REJECTIONS = [
    ({"flavor": {**FLAVOR, "vcpus": "two"}},
     "request_spec.flavor.vcpus: 'two' is not of type 'integer'"),
    ({"flavor": {**FLAVOR, "vcpus": True}},
     "request_spec.flavor.vcpus: True is not of type 'integer'"),
    ({"flavor": {**FLAVOR, "memory_mb": -1}},
     "request_spec.flavor.memory_mb: -1 is less than the minimum of 0"),
    ({"flavor": {**FLAVOR, "vcpus": 4097}},
     "request_spec.flavor.vcpus: 4097 is greater than the maximum of "
     "4096"),
    ({}, "request_spec.flavor: required but missing"),
    ({"num_instances": 1}, "request_spec.flavor: required but missing"),
    ({"flavor": {"vcpus": 1, "memory_mb": 512}},
     "request_spec.flavor.root_gb: required but missing"),
    ({"flavor": FLAVOR, "colour": "red"},
     "request_spec.colour: unknown key (expected one of availability_zone,"
     " cluster, flavor, force_hosts, force_nodes, ignore_hosts, image, "
     "num_instances, requested_networks, scheduler_hints)"),
    ({"flavor": {**FLAVOR, "swap": 1}},
     "request_spec.flavor.swap: unknown key"),
    ({"flavor": FLAVOR, "scheduler_hints": {"build_near_host_ip": "x"}},
     "request_spec.scheduler_hints.build_near_host_ip: unknown key"),
    ({"flavor": FLAVOR, "image": {"properties": {}, "id": "x"}},
     "request_spec.image.id: unknown key"),
    ({"flavor": FLAVOR, "ignore_hosts": ["h"] * 1001},
     "request_spec.ignore_hosts: 1001 items, at most 1000 allowed"),
    ({"flavor": FLAVOR, "force_hosts": ["h", 5]},
     "request_spec.force_hosts[1]: 5 is not of type 'string'"),
    ({"flavor": FLAVOR, "requested_networks": "net1"},
     "request_spec.requested_networks: 'net1' is not of type 'array' or "
     "'null'"),
    ({"flavor": FLAVOR, "availability_zone": "z" * 256},
     "request_spec.availability_zone: 'zzzz"),
    ({"flavor": {**FLAVOR, "extra_specs": {"k": 1}}},
     "request_spec.flavor.extra_specs.k: 1 is not of type 'string'"),
    ({"flavor": {**FLAVOR, "extra_specs": {"k" * 256: "v"}}},
     "request_spec.flavor.extra_specs: key 'kkkk"),
    ({"flavor": {**FLAVOR, "extra_specs": {
        f"k{i}": "v" for i in range(1001)}}},
     "request_spec.flavor.extra_specs: 1001 keys, at most 1000 allowed"),
    ({"flavor": FLAVOR, "num_instances": 0},
     "request_spec.num_instances: 0 is less than the minimum of 1"),
    ({"flavor": FLAVOR, "num_instances": 1001},
     "request_spec.num_instances: 1001 is greater than the maximum of "
     "1000"),
    ({"flavor": FLAVOR, "scheduler_hints": {"group_policy": "spread"}},
     "request_spec.scheduler_hints.group_policy: 'spread' is not one of "
     "'affinity', 'anti-affinity', 'soft-affinity', 'soft-anti-affinity'"),
    ({"flavor": FLAVOR, "scheduler_hints": {"same_host": "not-a-uuid"}},
     "request_spec.scheduler_hints.same_host: 'not-a-uuid' is not a "
     "'uuid'"),
    ({"flavor": FLAVOR, "scheduler_hints": {"different_host": [
        str(uuid.uuid4()), "x"]}},
     "request_spec.scheduler_hints.different_host[1]: 'x' is not a "
     "'uuid'"),
    ({"flavor": FLAVOR, "image": {"properties": {"hw": [1]}}},
     "request_spec.image.properties.hw: [1] is not of type 'string' or "
     "'number' or 'boolean' or 'null'"),
    ("flavor=m1", "request_spec: 'flavor=m1' is not of type 'object'"),
    (None, "request_spec: None is not of type 'object'"),
]


@pytest.mark.parametrize("request_spec, message", SCHEMA_REJECTIONS)
def test_schema_rejections_name_the_field(mgr, engine, request_spec,
                                          message):
    add_node(engine, "a")
    with pytest.raises(exception.InvalidRequest) as error:
        mgr.select_destinations(request_spec, uuids(1))
    assert str(error.value).startswith(message)
    with pytest.raises(exception.InvalidRequest):
        mgr.explain(request_spec)
    assert allocations(engine) == []
    # The manager keeps serving.
    assert mgr.select_destinations(spec(), uuids(1))[0][0]["host"] == "a"


def test_huge_payloads_are_refused_quickly_with_short_messages(mgr):
    huge = {"flavor": {**FLAVOR, "name": "n" * 10**7},
            "ignore_hosts": ["h" * 100] * 10**6}
    started = time.perf_counter()
    with pytest.raises(exception.InvalidRequest) as error:
        mgr.select_destinations(huge, uuids(1))
    assert time.perf_counter() - started < 0.5
    assert len(str(error.value)) < 300
    assert str(error.value).startswith("request_spec.flavor.name: 'nnnn")
    assert "10000000 characters, at most 255" in str(error.value)


def nested(depth: int) -> list:
    query: list = []
    for _ in range(depth - 1):
        query = [query]
    return query


@pytest.mark.parametrize("query, message", [
    ([["and"]] * 1000 + [["or"]],
     "request_spec.scheduler_hints.query: 1001 items, at most 1000"),
    ([[["=", 1, 1]] * 1000] * 20,
     "request_spec.scheduler_hints.query: more than 10000 elements"),
    (["and", {"op": "="}],
     "request_spec.scheduler_hints.query: {'op': '='} is an object"),
    (nested(40), "request_spec.scheduler_hints.query: nested deeper than "
     "32"),
    (["=", "$host", "h" * 256],
     "request_spec.scheduler_hints.query: 'hhhh"),
])
def test_query_hint_is_bounded(mgr, query, message):
    with pytest.raises(exception.InvalidRequest) as error:
        mgr.select_destinations(spec(scheduler_hints={"query": query}),
                                uuids(1))
    assert str(error.value).startswith(message)


@pytest.mark.parametrize("instance_uuids, message", [
    ("abc", "instance_uuids: 'abc' is not of type 'array'"),
    (["abc"], "instance_uuids[0]: 'abc' is not a 'uuid'"),
    ([5], "instance_uuids[0]: 5 is not of type 'string'"),
    ([], "instance_uuids: at least 1 item(s) required"),
    (["6f1b6c3e-0d1f-4b8e-9b1a-2f1e3c4d5e6f"] * 2,
     "instance_uuids: has duplicate items"),
    (uuids(3), "instance_uuids: 3 uuid(s) for request_spec.num_instances "
     "= 2"),
    (uuids(1001), "instance_uuids: 1001 items, at most 1000 allowed"),
])
def test_bad_instance_uuids(mgr, engine, instance_uuids, message):
    add_node(engine, "a")
    with pytest.raises(exception.InvalidRequest) as error:
        mgr.select_destinations(spec(num_instances=2), instance_uuids)
    assert str(error.value).startswith(message)
    assert allocations(engine) == []


def test_num_instances_defaults_to_the_uuids(mgr, engine):
    add_node(engine, "a", vcpus=4)
    assert len(mgr.select_destinations(spec(), uuids(3))) == 3


def test_bad_extra_spec_is_invalid_request(mgr, engine):
    add_node(engine, "a")
    bad = spec()
    bad["flavor"]["extra_specs"] = {"resources:cpu.percent": "<lots"}
    with pytest.raises(exception.InvalidRequest) as error:
        mgr.select_destinations(bad, uuids(1))
    assert "resources:cpu.percent" in str(error.value)
    with pytest.raises(exception.InvalidRequest):
        mgr.explain(bad)
    assert allocations(engine) == []


def test_full_spec_is_accepted(mgr, engine):
    now = models.utcnow().isoformat() + "Z"
    add_node(engine, "a", networks='["physnet1"]', vcpus=4,
             metrics='[{"name": "cpu.percent", "value": 10.0, '
             f'"timestamp": "{now}", "source": "test"}}]')
    full = {
        "flavor": {"name": "m1", "vcpus": 1, "memory_mb": 512,
                   "root_gb": 1, "ephemeral_gb": 0,
                   "extra_specs": {"resources:cpu.percent": "<= 90"}},
        "num_instances": 2, "availability_zone": "nova", "cluster": "c1",
        "scheduler_hints": {"group": "g1",
                            "group_policy": "soft-anti-affinity",
                            "different_host": [str(uuid.uuid4())],
                            "query": '[">=", "$free_ram_mb", 512]'},
        "ignore_hosts": ["b"], "force_hosts": ["a"],
        "force_nodes": ["a.example.org"],
        "requested_networks": ["physnet1"],
        "image": {"properties": {"hw_arch": "x86_64", "hw_cores": 2}},
    }
    result = mgr.select_destinations(full, uuids(2))
    assert [r[0]["host"] for r in result] == ["a", "a"]
    assert {row.instance_group for row in allocations(engine)} == {"g1"}
