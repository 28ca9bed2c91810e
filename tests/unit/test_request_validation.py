"""scheduler.request.validation: where jsonschema-rs and jsonschema could
read a request differently, the fast check refuses and jsonschema
decides (the fuzz tests of the whole schema are in test_manager.py)."""

import decimal
import enum

import hypothesis
import jsonschema
import jsonschema_rs
import pytest
from hypothesis import strategies as st

from scheduler import exception
from scheduler import request_values
from scheduler.filters import json_filter
from scheduler.request import schema as schema_mod
from scheduler.request import validation

UUID = "6f1b6c3e-0d1f-4b8e-9b1a-2f1e3c4d5e6f"


class Policy(enum.Enum):
    AFFINITY = "affinity"


def spec(**values) -> dict:
    return {"flavor": {"vcpus": 1, "memory_mb": 512, "root_gb": 1},
            **values}


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
