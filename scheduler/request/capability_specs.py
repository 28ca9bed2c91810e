"""The grammar of ``capabilities:`` extra specs (and of keys without a
scope), which ComputeCapabilitiesFilter matches against host attributes.

Values use Nova's extra-spec operators: ``s== x86_64``, ``>= 8``, ``<in>
avx2``, ``<or> a <or> b`` ... Note that Nova's ``=`` means *at least*.
Unlike Nova, a malformed operator (``s== `` with nothing after it,
``s=== x86_64``, ``<5``) is an InvalidExtraSpec naming the key, raised
before scheduling, rather than a requirement no host meets.
"""

import collections.abc
import dataclasses
import functools
import math
import operator
import re

from scheduler.request.extra_specs import InvalidExtraSpec

CAPABILITIES_SCOPE = "capabilities"

#: Nova's one extra spec of the ``hw:`` scope that its
#: ComputeCapabilitiesFilter reads: the guest's physical address bits,
#: which the host's CPU must offer at least.
MAXPHYSADDR_BITS = "hw:maxphysaddr_bits"
_MAXPHYSADDR_PATH = ("cpu_info", "maxphysaddr", "bits")

_NUMERIC_OPS: dict[str, collections.abc.Callable[[float, float], bool]] = {
    # Nova's "=" is "at least": capabilities:vcpus=8 accepts 16 vCPUs.
    "=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "<=": operator.le,
}

_STRING_OPS: dict[str, collections.abc.Callable[[str, str], bool]] = {
    "s==": operator.eq,
    "s!=": operator.ne,
    "s<": operator.lt,
    "s<=": operator.le,
    "s>": operator.gt,
    "s>=": operator.ge,
}

_LIST_OPS = ("<in>", "<all-in>", "<or>")

# Longest first, so that a prefix test never takes "s<" for "s<=".
_CAPABILITY_OPS = sorted([*_NUMERIC_OPS, *_STRING_OPS, *_LIST_OPS],
                         key=len, reverse=True)

CAPABILITY_EXPECTED = (
    "a value, or one of =, ==, !=, >=, <= followed by a number, s==, s!=, "
    "s<, s<=, s>, s>= followed by a string, '<in> value', "
    "'<all-in> value value...' or '<or> value <or> value...'")

_OR_SPLIT_RE = re.compile(r"\s*<or>\s*")

# What no string operand starts with but a doubled or mistyped operator
# does.
_OPERATOR_CHARACTERS = frozenset("=<>!")

# "s=", "s!", "s<>" ...: an "s" operator that is none of Nova's.
_STRING_OP_TYPO_RE = re.compile(r"s[=<>!]")

_COLLECTIONS = (list, tuple, set, frozenset, collections.abc.Mapping)
_SCALARS = (str, int, float)


@dataclasses.dataclass(frozen=True)
class CapabilitySpec:
    """One capabilities extra spec: where to look and what to expect."""

    key: str
    #: Host attribute, then keys into nested dicts.
    path: tuple[str, ...]
    requirement: str
    #: False for a key without ``capabilities:``, which (as in Nova)
    #: counts only when it names a host attribute.
    scoped: bool = True

    @property
    def attribute(self) -> str:
        """``cpu_info:arch``: the path as operators write it."""
        return ":".join(self.path)

    def __str__(self) -> str:
        return f"{self.key} {self.requirement.strip()}".rstrip()


@dataclasses.dataclass(frozen=True)
class Requirement:
    """A parsed capability requirement (``parse_requirement()``)."""

    #: The operator, None for plain equality.
    op: str | None
    #: What the operator compares with: a string, a float, or a tuple of
    #: strings for ``<all-in>`` and ``<or>``.
    operand: object

    def matches(self, actual: object) -> bool:
        """``match_capability()`` for this requirement."""
        op, operand = self.op, self.operand
        # Scalars first: checking them against the Mapping ABC costs ten
        # times more, and the filter matches once per host.
        is_collection = (not isinstance(actual, _SCALARS)
                         and isinstance(actual, _COLLECTIONS))
        members = {str(item) for item in actual} if is_collection else None
        if op is None:
            return (operand in members if is_collection
                    else str(actual) == operand)
        if op in _NUMERIC_OPS:
            number = _as_number(actual)
            return number is not None and _NUMERIC_OPS[op](number, operand)
        if op in _STRING_OPS:
            return _STRING_OPS[op](str(actual), operand)
        if op == "<in>":
            return operand in members if is_collection else operand in str(
                actual)
        if op == "<all-in>":
            if is_collection:
                return all(value in members for value in operand)
            return all(value in str(actual) for value in operand)
        # <or>
        if is_collection:
            return any(value in members for value in operand)
        return str(actual) in operand


@functools.lru_cache(maxsize=1024)
def parse_requirement(requirement: str) -> Requirement:
    """A capability requirement (``>= 8``, ``<in> avx2``, ``x86_64`` ...)
    parsed; ValueError when it is malformed. Cached: the same flavors
    come back request after request."""
    text = requirement.strip()
    op = next((o for o in _CAPABILITY_OPS if text.startswith(o)), None)
    if op is None:
        if text[:1] in ("<", ">") or _STRING_OP_TYPO_RE.match(text):
            # "<5", "<any> x" or "s=x" is a mistyped operator far more
            # often than a capability value that starts with a bracket.
            raise ValueError(f"unknown operator in {text!r}")
        if not text:
            raise ValueError("empty value")
        return Requirement(None, text)
    rest = text[len(op):].strip()
    if op in _NUMERIC_OPS:
        try:
            number = float(rest)
        except ValueError:
            raise ValueError(f"{rest!r} after {op} is not a number") from None
        if not math.isfinite(number):
            raise ValueError(f"{rest!r} after {op} is not a finite number")
        return Requirement(op, number)
    if op in _STRING_OPS:
        if not rest:
            raise ValueError(f"nothing after {op}")
        if rest[:1] in _OPERATOR_CHARACTERS:
            # "s=== x86_64" would compare with "= x86_64" and match no
            # host: a typo, reported as one.
            raise ValueError(f"malformed operator {op}{rest.split()[0]}")
        return Requirement(op, rest)
    if op == "<in>":
        if not rest:
            raise ValueError("nothing after <in>")
        return Requirement(op, rest)
    if op == "<all-in>":
        values = tuple(rest.split())
        if not values:
            raise ValueError("nothing after <all-in>")
        return Requirement(op, values)
    values = tuple(_OR_SPLIT_RE.split(rest))
    if not all(values):
        raise ValueError("an empty alternative in <or>")
    return Requirement(op, values)


def _as_number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def match_capability(actual: object, requirement: str) -> bool:
    """Whether a host attribute value ``actual`` meets ``requirement``
    (Nova's extra-spec operators).

    Lists, sets and dicts (by key) are matched by membership, other
    values by their string form. A numeric operator on a value that is
    not a number is simply no match. Raises ValueError on a malformed
    requirement; ``validate_capability_specs`` reports those with their
    key before scheduling starts.
    """
    return parse_requirement(requirement).matches(actual)


def capability_path(key: str) -> tuple[str, ...] | None:
    """The host attribute path addressed by ``key``: ``capabilities:a:b``
    and (as in Nova) an unscoped ``a`` are capabilities; None for keys of
    other scopes (``resources:``, ``hw:`` ...)."""
    scope, sep, rest = key.partition(":")
    if not sep:
        return (key,)
    if scope != CAPABILITIES_SCOPE:
        return None
    return tuple(rest.split(":"))


def capability_specs(
        extra_specs: collections.abc.Mapping[str, str],
) -> list[CapabilitySpec]:
    """The capabilities extra specs, sorted by key, without validating
    their requirements."""
    specs = []
    for key in sorted(extra_specs):
        value = str(extra_specs[key])
        if key == MAXPHYSADDR_BITS:
            specs.append(CapabilitySpec(key, _MAXPHYSADDR_PATH,
                                        f">= {value}"))
            continue
        path = capability_path(key)
        if path is not None:
            specs.append(CapabilitySpec(key, path, value, scoped=":" in key))
    return specs


def validate_capability_specs(
        extra_specs: collections.abc.Mapping[str, str],
) -> list[CapabilitySpec]:
    """The capabilities extra specs (unscoped keys included), or
    InvalidExtraSpec for the first malformed one."""
    specs = capability_specs(extra_specs)
    check_capability_specs(specs)
    return specs


def check_capability_specs(
        specs: collections.abc.Iterable[CapabilitySpec]) -> None:
    """InvalidExtraSpec for the first malformed spec of ``specs`` (from
    ``capability_specs()``); called once per request so that a typo fails
    the request instead of every host."""
    for spec in specs:
        if not all(spec.path):
            raise InvalidExtraSpec(
                spec.key, spec.requirement,
                f"a host attribute after {CAPABILITIES_SCOPE}:, e.g. "
                f"{CAPABILITIES_SCOPE}:cpu_info:arch")
        try:
            parse_requirement(spec.requirement)
        except ValueError as exc:
            raise InvalidExtraSpec(
                spec.key, spec.requirement,
                f"{CAPABILITY_EXPECTED} ({exc})") from None
