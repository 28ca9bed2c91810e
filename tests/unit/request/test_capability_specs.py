"""scheduler.request.capability_specs: capabilities extra specs."""

import hypothesis
import pytest
from hypothesis import strategies as st

from scheduler.request import capability_specs
from scheduler.request import extra_specs
from scheduler.request.extra_specs import InvalidExtraSpec

# --- capabilities --------------------------------------------------------

_CAPABILITY_CASES = [
    # Bare values: string equality, membership in lists.
    ("x86_64", "x86_64", True),
    ("x86_64", "aarch64", False),
    (8, "8", True),
    (8, "9", False),
    (["avx", "avx2"], "avx2", True),
    (["avx", "avx2"], "sse4", False),
    (frozenset({"net-a", "net-b"}), "net-a", True),
    ("x86_64", "  x86_64  ", True),
    (True, "True", True),
    # "=" is Nova's "at least".
    (16, "= 8", True),
    (8, "= 8", True),
    (4, "= 8", False),
    (8.5, "=8", True),
    ("16", "= 8", True),
    # Numeric comparisons.
    (8, "== 8", True),
    (8.0, "== 8", True),
    (9, "== 8", False),
    (9, "!= 8", True),
    (8, "!= 8", False),
    (8, ">= 8", True),
    (7, ">= 8", False),
    (8, "<= 8", True),
    (9, "<= 8", False),
    (2.5, ">= 2.25", True),
    (-1, "<= -0.5", True),
    (1024, ">= 1e3", True),
    # A value that is not a number matches no numeric requirement.
    ("x86_64", ">= 8", False),
    ("x86_64", "!= 8", False),
    (["8"], "== 8", False),
    ({"cores": 8}, ">= 1", False),
    (True, "== 1", False),
    # String comparisons.
    ("x86_64", "s== x86_64", True),
    ("x86_64", "s==x86_64", True),
    ("x86_64", "s== aarch64", False),
    ("x86_64", "s!= aarch64", True),
    ("x86_64", "s!= x86_64", False),
    ("b", "s< c", True),
    ("c", "s< c", False),
    ("c", "s<= c", True),
    ("d", "s<= c", False),
    ("d", "s> c", True),
    ("c", "s> c", False),
    ("c", "s>= c", True),
    ("b", "s>= c", False),
    (10, "s< 9", True),  # string order, not numeric
    # <in>: substring of strings, membership in lists and dicts.
    ("Intel Xeon Gold", "<in> Xeon", True),
    ("Intel Xeon Gold", "<in> Xeon Gold", True),
    ("Intel Xeon Gold", "<in> EPYC", False),
    (["avx", "avx2"], "<in> avx2", True),
    (["avx2"], "<in> avx", False),
    ({"arch": "x86_64"}, "<in> arch", True),
    (42, "<in> 4", True),
    # <all-in>.
    (["avx", "avx2", "sse4"], "<all-in> avx sse4", True),
    (["avx", "avx2"], "<all-in> avx sse4", False),
    ("avx avx2 sse4", "<all-in> avx2 sse4", True),
    ("avx avx2", "<all-in> avx2 sse4", False),
    # <or>.
    ("x86_64", "<or> aarch64 <or> x86_64", True),
    ("ppc64le", "<or> aarch64 <or> x86_64", False),
    ("x86_64", "<or> x86_64", True),
    ("Intel Xeon", "<or> Intel Xeon <or> AMD EPYC", True),
    ("Intel", "<or> Intel Xeon <or> AMD EPYC", False),
    (["avx", "avx2"], "<or> sse4 <or> avx2", True),
    (["avx", "avx2"], "<or> sse4 <or> neon", False),
]


@pytest.mark.parametrize(("actual", "requirement", "expected"),
                         _CAPABILITY_CASES)
def test_match_capability(actual, requirement, expected):
    assert capability_specs.match_capability(actual, requirement) is expected


@pytest.mark.parametrize("requirement", [
    ">= abc", "= abc", "== ", "!=", "<= nan", ">= inf", "<in>", "<in>   ",
    "<all-in>", "<or>", "<or> a <or>", "<or> a <or> <or> b", "<5", "> 5",
    "<any> x", "", "   ", "=> 5",
])
def test_match_capability_malformed_requirement(requirement):
    with pytest.raises(ValueError):
        capability_specs.match_capability("x", requirement)


@pytest.mark.parametrize(("key", "path"), [
    ("capabilities:cpu_info:arch", ("cpu_info", "arch")),
    ("capabilities:cpu_info:topology:cores",
     ("cpu_info", "topology", "cores")),
    ("capabilities:vcpus", ("vcpus",)),
    ("vcpus", ("vcpus",)),
    ("resources:cpu.percent", None),
    ("hw:cpu_policy", None),
    ("capabilitiesx:vcpus", None),
])
def test_capability_path(key, path):
    assert capability_specs.capability_path(key) == path


def test_capability_specs_selects_capability_keys():
    specs = capability_specs.validate_capability_specs({
        "capabilities:cpu_info:arch": "s== x86_64",
        "resources:cpu.percent": "<50",
        "hw:cpu_policy": "dedicated",
        "trust": "trusted",
    })
    assert [(s.key, s.path, s.requirement) for s in specs] == [
        ("capabilities:cpu_info:arch", ("cpu_info", "arch"), "s== x86_64"),
        ("trust", ("trust",), "trusted"),
    ]
    assert str(specs[0]) == "capabilities:cpu_info:arch s== x86_64"
    assert specs[0].attribute == "cpu_info:arch"


@pytest.mark.parametrize(("key", "value"), [
    ("capabilities:vcpus", ">= abc"),
    ("capabilities:vcpus", "= eight"),
    ("capabilities:memory_mb", "<= 1.5G"),
    ("capabilities:cpu_info:features", "<all-in>"),
    ("capabilities:cpu_info:arch", "<or>"),
    ("capabilities:vcpus", "<8"),
    ("capabilities:", "x86_64"),
    ("capabilities:cpu_info:", "x86_64"),
    ("capabilities::arch", "x86_64"),
    ("vcpus", ">= many"),
])
def test_validate_capability_specs_rejects(key, value):
    with pytest.raises(InvalidExtraSpec) as info:
        capability_specs.validate_capability_specs(
            {key: value, "resources:cpu.percent": "<50"})
    assert info.value.key == key
    assert info.value.value == value
    assert key in str(info.value)
    assert repr(value) in str(info.value)


def test_validate_capability_specs_ignores_other_scopes():
    # Malformed for the capabilities grammar, but not capabilities.
    assert capability_specs.validate_capability_specs(
        {"resources:cpu.percent": "<50", "hw:mem": ">= abc"}) == []


def test_parse_requirement_is_what_match_capability_applies():
    requirement = capability_specs.parse_requirement(" <all-in> avx  avx2 ")
    assert requirement == capability_specs.Requirement("<all-in>",
                                                  ("avx", "avx2"))
    assert requirement.matches(["avx2", "avx", "sse4"])
    assert not requirement.matches(["avx"])
    assert capability_specs.parse_requirement(">= 8") == \
        capability_specs.Requirement(">=", 8.0)
    assert capability_specs.parse_requirement("x86_64").op is None
    # Cached: a flavor's requirements are parsed once, not per host.
    assert capability_specs.parse_requirement("s== x") is \
        capability_specs.parse_requirement("s== x")
    with pytest.raises(ValueError):
        capability_specs.parse_requirement("<5")


@hypothesis.given(
    number=st.decimals(min_value=0, max_value=10**6, places=3,
                       allow_nan=False, allow_infinity=False),
    suffix=st.sampled_from(sorted(extra_specs.SUFFIXES) + [""]),
    upper=st.booleans(),
    left=st.sampled_from(["", " ", "  "]),
    right=st.sampled_from(["", " ", "\t"]))
def test_quantity_property(number, suffix, upper, left, right):
    """Any number with any suffix, in either case, with whitespace around,
    parses to number x multiplier."""
    text = f"{left}{number}{suffix.upper() if upper else suffix}{right}"
    expected = float(number) * extra_specs.SUFFIXES.get(suffix.lower(), 1.0)
    assert extra_specs.parse_quantity(text) == pytest.approx(expected)


@hypothesis.given(value=st.floats(min_value=0, max_value=1e15),
                  op=st.sampled_from(sorted(extra_specs.THRESHOLD_OPS)),
                  threshold=st.integers(min_value=0, max_value=10**6),
                  suffix=st.sampled_from(["", "K", "M", "G", "Gi"]))
def test_threshold_spec_property(value, op, threshold, suffix):
    """A parsed threshold spec decides like the operator on the scaled
    number, and always names its metric and raw value."""
    spec, = extra_specs.parse_resource_specs(
        {"resources:net.bw": f"{op} {threshold}{suffix}"})
    scaled = threshold * extra_specs.SUFFIXES.get(suffix.lower(), 1.0)
    assert spec.metric == "net.bw" and spec.op == op
    assert spec.satisfied_by(value) == extra_specs.THRESHOLD_OPS[op](
        value, scaled)
