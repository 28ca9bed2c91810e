"""Request values no database can store, refused naming the field (issue
18 item 8; the databases themselves: tests/functional/
test_request_text.py)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler import exception
from scheduler.request import values as request_values
from scheduler.request.validation import validate_request

SPEC = {"flavor": {"vcpus": 1, "memory_mb": 64, "root_gb": 1}}


@pytest.mark.parametrize("text, problem", [
    ("x\x00y", "holds a NUL character at position 1"),
    ("x\ud800y", "holds a lone surrogate U+D800 at position 1"),
    ("\udfff", "holds a lone surrogate U+DFFF at position 0"),
])
def test_unstorable_text(text, problem):
    assert request_values.text_problem(text).startswith(problem)


@given(st.text(st.characters(codec="utf-8", exclude_characters="\x00")))
def test_any_other_text_is_storable(text):
    assert request_values.text_problem(text) is None


@pytest.mark.parametrize("spec, message", [
    ({**SPEC, "scheduler_hints": {"group": "x\ud800y"}},
     "request_spec.scheduler_hints.group: 'x\\ud800y' holds a lone "
     "surrogate U+D800 at position 1, which is not Unicode text and which "
     "no database can store"),
    ({**SPEC, "cluster": "c\x00"},
     "request_spec.cluster: 'c\\x00' holds a NUL character at position 1, "
     "which no database can store"),
    ({**SPEC, "force_hosts": ["a", "b\x00"]},
     "request_spec.force_hosts[1]: 'b\\x00' holds a NUL character"),
    ({"flavor": {**SPEC["flavor"], "extra_specs": {"k\x00": "v"}}},
     "request_spec.flavor.extra_specs: key 'k\\x00' holds a NUL"),
    ({**SPEC, "image": {"properties": {"hw_x": float("nan")}}},
     "request_spec.image.properties.hw_x: nan is not a finite number"),
    ({**SPEC, "image": {"properties": {"hw_x": float("inf")}}},
     "request_spec.image.properties.hw_x: inf is not a finite number"),
    ({**SPEC, "scheduler_hints": {"query": ["<", "$free_ram_mb",
                                            float("nan")]}},
     "request_spec.scheduler_hints.query[2]: nan is not a finite number"),
])
def test_validate_request_names_the_field(spec, message):
    with pytest.raises(exception.InvalidRequest) as error:
        validate_request(spec)
    assert str(error.value).startswith(message)


def test_storable_text_passes_unchanged():
    spec = {**SPEC, "cluster": "Zürich-東京-🎉",
            "scheduler_hints": {"group": " trailing "}}
    validated, _ = validate_request(spec)
    assert validated["cluster"] == "Zürich-東京-🎉"
    assert validated["scheduler_hints"]["group"] == " trailing "


def test_check_text_of_one_argument():
    request_values.check_text(None, "cluster")
    request_values.check_text("ok", "cluster")
    with pytest.raises(exception.InvalidRequest,
                       match=r"^cluster: 'a\\x00' holds a NUL"):
        request_values.check_text("a\x00", "cluster")
