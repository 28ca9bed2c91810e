"""The fast validity check of a request agrees with jsonschema."""

import hypothesis
import jsonschema
from hypothesis import strategies as st

from scheduler import exception
from scheduler.request import schema as schema_mod
from scheduler.request import validation
from scheduler.request import values

# The fast validity check agrees with jsonschema.

_texts = st.one_of(st.sampled_from(
    ["", "a", "x" * 255, "x" * 256, "6f1b6c3e-0d1f-4b8e-9b1a-2f1e3c4d5e6f",
     "affinity", "anti-affinity", "soft-affinity", "nope"]), st.text(
        max_size=5))
_scalars = st.one_of(st.none(), st.booleans(), _texts,
                     st.integers(-2, 2**31 + 1), st.sampled_from(
                         [0, 1, 4096, 4097, 1000, 1001, 2**31 - 1]),
                     st.floats(allow_nan=False, allow_infinity=False),
                     st.sampled_from([1.0, 2.5]))
_values = st.recursive(_scalars, lambda children: st.one_of(
    st.lists(children, max_size=4),
    st.dictionaries(_texts, children, max_size=3)), max_leaves=8)
_KEYS = {
    "": ["flavor", "num_instances", "availability_zone", "cluster",
         "scheduler_hints", "ignore_hosts", "force_hosts", "force_nodes",
         "requested_networks", "image", "other"],
    "flavor": ["name", "vcpus", "memory_mb", "root_gb", "ephemeral_gb",
               "extra_specs", "other"],
    "scheduler_hints": ["same_host", "different_host", "group",
                        "group_policy", "query", "other"],
    "image": ["properties", "other"],
}


@st.composite
def request_specs(draw, path=""):
    keys = draw(st.lists(st.sampled_from(_KEYS[path]), max_size=7,
                         unique=True))
    result = {}
    for key in keys:
        if key in _KEYS and draw(st.booleans()):
            result[key] = draw(request_specs(key))
        elif key in ("extra_specs", "properties") and draw(st.booleans()):
            result[key] = draw(st.dictionaries(_texts, _scalars,
                                               max_size=3))
        else:
            result[key] = draw(_values)
    if path == "" and draw(st.integers(0, 3)):
        result["flavor"] = {"vcpus": draw(_scalars),
                            "memory_mb": draw(_scalars),
                            "root_gb": draw(st.integers(-1, 2**30))}
    return result


def _unstorable(request_spec: dict) -> bool:
    try:
        values.check(request_spec, "request_spec")
    except exception.InvalidRequest:
        return True
    return False


@hypothesis.settings(max_examples=400, deadline=None)
@hypothesis.given(request_specs())
def test_fast_check_agrees_with_jsonschema(request_spec):
    spec_checker, _ = validation._checkers()
    valid = jsonschema.Draft202012Validator(
        schema_mod.request_spec_schema(),
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).is_valid(request_spec)
    assert spec_checker.fast(request_spec) is valid
    try:
        validation.validate_request(request_spec)
    except exception.InvalidRequest as error:
        # Beyond the schema: a hint's query, and strings (a NUL) or
        # numbers no database can store.
        assert not valid or "query" in str(error) or _unstorable(
            request_spec)
        assert str(error).startswith("request_spec")
    else:
        assert valid


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(st.one_of(_values, st.lists(_texts, max_size=4)))
def test_fast_uuid_check_agrees_with_jsonschema(instance_uuids):
    _, uuids_checker = validation._checkers()
    schema = schema_mod.request_spec_schema()["$defs"]["instance_uuids"]
    valid = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).is_valid(instance_uuids)
    assert uuids_checker.fast(instance_uuids) is valid


def test_schema_ships_with_the_package():
    schema = schema_mod.request_spec_schema()
    assert schema["$schema"] == ("https://json-schema.org/draft/2020-12/"
                                 "schema")
    assert schema["required"] == ["flavor"]
