"""The grammar of flavor extra specs, in one place.

Two families of extra specs constrain where an instance may land:

* ``<scope>:<metric>`` (scope ``resources`` by default, DESIGN §4): ``max``
  or ``min`` asks the weigher to prefer hosts with the largest (smallest)
  value of the metric; ``<op><quantity>`` is a hard threshold checked by
  ResourcesThresholdFilter. Quantities take SI suffixes ``K M G T``
  (10^3 .. 10^12) and binary ones ``Ki Mi Gi Ti`` (2^10 .. 2^40), case
  insensitive, so ``m`` is mega, never milli. ``=`` and ``==`` both mean
  equal here.
* ``capabilities:<attribute>[:<key>...]`` (and keys without any ``:``):
  Nova's extra-spec operators, matched against host attributes by
  ComputeCapabilitiesFilter. Note that Nova's ``=`` means *at least*.

Filters, weighers, request validation and the CLI all parse through this
module so that they accept exactly the same values and report a bad one
with the same message.
"""

import collections.abc
import dataclasses
import functools
import math
import operator
import re

from compute_monitor.base import METRIC_NAME_RE
from scheduler.exception import InvalidRequest

#: Multipliers of the quantity suffixes, by lower-case suffix.
SUFFIXES: dict[str, float] = {
    "k": 1e3,
    "m": 1e6,
    "g": 1e9,
    "t": 1e12,
    "ki": float(2**10),
    "mi": float(2**20),
    "gi": float(2**30),
    "ti": float(2**40),
}

GOALS = ("max", "min")

RESOURCE_EXPECTED = (
    "max, min or <op><number>[K|M|G|T|Ki|Mi|Gi|Ti] with op one of "
    "<, <=, >, >=, =, ==, !=")

CAPABILITIES_SCOPE = "capabilities"

# [0-9] rather than \d: float() would accept other scripts' digits, which
# no operator means to type into a flavor.
_QUANTITY_RE = re.compile(
    r"\s*(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:e[+-]?[0-9]+)?)\s*(?P<suffix>[kmgt]i?)?\s*",
    re.IGNORECASE)

# Longest operators first so that "<=" is not read as "<" then "=...".
_THRESHOLD_RE = re.compile(r"\s*(<=|>=|==|!=|<|>|=)(.*)", re.DOTALL)


def _equal(value: float, threshold: float) -> bool:
    # Suffixed thresholds such as 1.1G are not exact binary floats.
    return math.isclose(value, threshold, rel_tol=1e-12, abs_tol=0.0)


def _not_equal(value: float, threshold: float) -> bool:
    return not _equal(value, threshold)


THRESHOLD_OPS: dict[str, collections.abc.Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "=": _equal,
    "==": _equal,
    "!=": _not_equal,
}


# Nova's name for this error, which operators and API nodes know.
class InvalidExtraSpec(InvalidRequest):
    """A flavor extra spec (or scheduler hint) the scheduler cannot read.

    Raised before any host is looked at; the message names the key, the
    value and the form that was expected.
    """

    def __init__(self, key: str, value: object, expected: str,
                 message: str | None = None):
        self.key = key
        self.value = value
        self.expected = expected
        super().__init__(message or
                         f"invalid extra spec {key}={value!r}: expected "
                         f"{expected}")


def parse_quantity(text: str) -> float:
    """``1.5G`` -> 1.5e9, ``2Ki`` -> 2048.0; ValueError when ``text`` is
    not a finite number with an optional suffix."""
    match = _QUANTITY_RE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(
            f"{text!r} is not a number with an optional suffix "
            "K, M, G, T, Ki, Mi, Gi or Ti")
    value = float(match["number"])
    suffix = match["suffix"]
    if suffix:
        value *= SUFFIXES[suffix.lower()]
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is out of range")
    return value


@dataclasses.dataclass(frozen=True)
class ResourceSpec:
    """One ``<scope>:<metric>`` extra spec: a goal or a threshold."""

    #: The full extra-spec key, e.g. ``resources:network.rx.bps``.
    key: str
    #: The metric name after the scope prefix.
    metric: str
    #: ``max`` or ``min`` for a weighing goal, else None.
    goal: str | None = None
    #: The comparison operator of a threshold, else None.
    op: str | None = None
    #: The threshold in base units (suffix applied), else None.
    threshold: float | None = None
    #: The value as written in the flavor.
    raw: str = ""

    @property
    def is_threshold(self) -> bool:
        return self.op is not None

    def satisfied_by(self, value: float) -> bool:
        """Whether a host whose metric is ``value`` meets the threshold;
        a goal constrains nothing and is always satisfied."""
        if self.op is None or self.threshold is None:
            return True
        return THRESHOLD_OPS[self.op](value, self.threshold)

    @property
    def compact(self) -> str:
        """``network.rx.bps>=85M``: short enough for a NoValidHost
        histogram, and in the operator's own units."""
        if self.goal is not None:
            return f"{self.metric}={self.goal}"
        return self.metric + "".join(self.raw.split())

    def __str__(self) -> str:
        return self.compact


def parse_resource_spec(key: str, value: str,
                        scope: str = "resources") -> ResourceSpec:
    """Parse one ``<scope>:<metric>`` extra spec; raises InvalidExtraSpec.
    """
    prefix = f"{scope}:"
    if not key.startswith(prefix):
        raise InvalidExtraSpec(key, value, f"a key starting with {prefix}")
    metric = key[len(prefix):]
    if not METRIC_NAME_RE.match(metric):
        raise InvalidExtraSpec(
            key, value,
            f"a dotted lower-case metric name after {prefix}, e.g. "
            f"{prefix}network.rx.bps")
    raw = str(value)
    word = raw.strip().lower()
    if word in GOALS:
        return ResourceSpec(key=key, metric=metric, goal=word, raw=raw)
    match = _THRESHOLD_RE.fullmatch(raw)
    if match is None:
        raise InvalidExtraSpec(key, value, RESOURCE_EXPECTED)
    try:
        threshold = parse_quantity(match[2])
    except ValueError:
        raise InvalidExtraSpec(key, value, RESOURCE_EXPECTED) from None
    return ResourceSpec(key=key, metric=metric, op=match[1],
                        threshold=threshold, raw=raw)


def parse_resource_specs(extra_specs: collections.abc.Mapping[str, str],
                         scope: str = "resources") -> list[ResourceSpec]:
    """Every ``<scope>:`` extra spec, parsed and sorted by key; other keys
    are ignored. Raises InvalidExtraSpec on the first bad one (in key
    order, so the error is the same on every run)."""
    prefix = f"{scope}:"
    return [parse_resource_spec(key, extra_specs[key], scope)
            for key in sorted(extra_specs) if key.startswith(prefix)]


# --- capabilities --------------------------------------------------------

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

_COLLECTIONS = (list, tuple, set, frozenset, collections.abc.Mapping)
_SCALARS = (str, int, float)


@dataclasses.dataclass(frozen=True)
class CapabilitySpec:
    """One capabilities extra spec: where to look and what to expect."""

    key: str
    #: Host attribute, then keys into nested dicts.
    path: tuple[str, ...]
    requirement: str

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
        if text[:1] in ("<", ">"):
            # "<5" or "<any> x" is a mistyped operator far more often
            # than a capability value that starts with a bracket.
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
        path = capability_path(key)
        if path is not None:
            specs.append(CapabilitySpec(key, path, str(extra_specs[key])))
    return specs


def validate_capability_specs(
        extra_specs: collections.abc.Mapping[str, str],
) -> list[CapabilitySpec]:
    """The capabilities extra specs, or InvalidExtraSpec for the first
    malformed one; called once per request so that a typo fails the
    request instead of every host."""
    specs = capability_specs(extra_specs)
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
    return specs
