"""Nova's extra-spec operator tests (nova/tests/unit/scheduler/filters/
test_extra_specs_ops.py), ported to the capabilities grammar that
ComputeCapabilitiesFilter matches with
(``scheduler.request.capability_specs``).

Nova matched the host value's string form; here lists stay lists (a
CPU's features), so the ``<all-in>`` cases give the list itself.
``REFUSED``: the requirement is malformed and the request refused
naming the key, where Nova matched nothing.
"""

import pytest

from scheduler.request import capability_specs
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import ids

REFUSED = "refused"
FEATURES = ["aes", "mmx", "aux"]


def _op(name: str, value: object, requirement: str, expected: object,
        differs: str | None = None) -> Case:
    return Case(name, expected, host={"value": value},
                request={"requirement": requirement}, differs=differs)


CASES = [
    _op("test_extra_specs_matches_simple", "1", "1", True),
    _op("test_extra_specs_fails_simple", "", "1", False),
    _op("test_extra_specs_fails_simple2", "3", "1", False),
    _op("test_extra_specs_fails_simple3", "222", "2", False),
    _op("test_extra_specs_fails_with_bogus_ops", "4", "> 2", REFUSED,
        "malformed-extra-spec"),
    _op("test_extra_specs_matches_with_op_eq", "123", "= 123", True),
    _op("test_extra_specs_matches_with_op_eq2", "124", "= 123", True),
    _op("test_extra_specs_fails_with_op_eq", "34", "= 234", False),
    _op("test_extra_specs_fails_with_op_eq3", "34", "=", REFUSED,
        "malformed-extra-spec"),
    _op("test_extra_specs_matches_with_op_seq", "123", "s== 123", True),
    _op("test_extra_specs_fails_with_op_seq", "1234", "s== 123", False),
    _op("test_extra_specs_matches_with_op_sneq", "1234", "s!= 123", True),
    _op("test_extra_specs_fails_with_op_sneq", "123", "s!= 123", False),
    _op("test_extra_specs_fails_with_op_sge", "1000", "s>= 234", False),
    _op("test_extra_specs_fails_with_op_sle", "1234", "s<= 1000", False),
    _op("test_extra_specs_fails_with_op_sl", "2", "s< 12", False),
    _op("test_extra_specs_fails_with_op_sg", "12", "s> 2", False),
    _op("test_extra_specs_matches_with_op_in", "12311321", "<in> 11", True),
    _op("test_extra_specs_matches_with_op_in2", "12311321",
        "<in> 12311321", True),
    # Nova read the first word after <in>; here the operand is the whole
    # rest, "12311321 <in>", which is not in the value.
    _op("test_extra_specs_matches_with_op_in3", "12311321",
        "<in> 12311321 <in>", False, "capability-operands"),
    _op("test_extra_specs_fails_with_op_in", "12310321", "<in> 11", False),
    _op("test_extra_specs_fails_with_op_in2", "12310321", "<in> 11 <in>",
        False),
    _op("test_extra_specs_matches_with_op_or", "12", "<or> 11 <or> 12",
        True),
    # A trailing <or> is an empty alternative: malformed.
    _op("test_extra_specs_matches_with_op_or2", "12",
        "<or> 11 <or> 12 <or>", REFUSED, "capability-operands"),
    _op("test_extra_specs_fails_with_op_or", "13", "<or> 11 <or> 12",
        False),
    _op("test_extra_specs_fails_with_op_or2", "13", "<or> 11 <or> 12 <or>",
        REFUSED, "capability-operands"),
    _op("test_extra_specs_matches_with_op_le", "2", "<= 10", True),
    _op("test_extra_specs_fails_with_op_le", "3", "<= 2", False),
    _op("test_extra_specs_matches_with_op_ge", "3", ">= 1", True),
    _op("test_extra_specs_fails_with_op_ge", "2", ">= 3", False),
    _op("test_extra_specs_matches_all_with_op_allin", FEATURES,
        "<all-in> aes mmx", True),
    _op("test_extra_specs_matches_one_with_op_allin", FEATURES,
        "<all-in> mmx", True),
    _op("test_extra_specs_fails_with_op_allin", FEATURES, "<all-in> txt",
        False),
    _op("test_extra_specs_fails_all_with_op_allin", FEATURES,
        "<all-in> txt 3dnow", False),
    _op("test_extra_specs_fails_match_one_with_op_allin", FEATURES,
        "<all-in> txt aes", False),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_extra_specs_ops(case):
    requirement = case.request["requirement"]
    try:
        outcome = capability_specs.match_capability(case.host["value"],
                                                    requirement)
    except ValueError:
        outcome = REFUSED
    assert outcome == case.expected
