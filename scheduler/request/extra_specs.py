"""The grammar of flavor extra specs, in one place.

Two families of extra specs constrain where an instance may land:

* ``<scope>:<metric>`` (scope ``resources`` by default,
docs/operator-guide.md): ``max`` or ``min`` asks the weigher to prefer hosts
with the largest (smallest) value of the metric; ``<op><quantity>`` is a hard
threshold checked by ResourcesThresholdFilter. Quantities take SI suffixes ``K
M G T`` (10^3 .. 10^12) and binary ones ``Ki Mi Gi Ti`` (2^10 .. 2^40), case
insensitive, so ``m`` is mega, never milli. ``=`` and ``==`` both mean equal
here.
* ``capabilities:<attribute>[:<key>...]`` (and keys without any ``:``):
  Nova's extra-spec operators, matched against host attributes by
  ComputeCapabilitiesFilter; their grammar is in
  ``scheduler.request.capability_specs``.

Filters, weighers, request validation and the CLI all parse through this
module so that they accept exactly the same values and report a bad one
with the same message.
"""

import collections.abc
import dataclasses
import difflib
import math
import operator
import re

from scheduler.conf import metric_stat
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
    try:
        metric_stat.parse(metric)
    except ValueError as e:
        raise InvalidExtraSpec(
            key, value,
            f"a dotted lower-case metric name after {prefix}, e.g. "
            f"{prefix}network.rx.bps or {prefix}cpu.percent:p95:1h "
            f"({e})") from None
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


# --- scopes --------------------------------------------------------------

# Nova's granular request groups (resources1:, resources_gpu:, trait2:)
# extend a scope name on purpose.
_GRANULAR_SUFFIX_RE = re.compile(r"[0-9_-][A-Za-z0-9_-]*")


def misspelt_scopes(extra_specs: collections.abc.Mapping[str, str],
                    known: collections.abc.Iterable[str]
                    ) -> list[tuple[str, str]]:
    """(key, scope it was probably meant to have) of every extra spec
    whose scope is not one of ``known`` but looks like a misspelling of
    one (``resource:``, ``Capabilities:``, ``capabilites:``), in key
    order.

    Such a key is silently ignored by every plugin, so the constraint
    the operator meant is not applied; the scheduler warns instead.
    """
    scopes = sorted(set(known))
    folded = {scope.casefold(): scope for scope in scopes}
    found = []
    for key in sorted(extra_specs):
        scope, sep, _rest = key.partition(":")
        if not sep or scope in scopes or any(
                scope.startswith(known_scope)
                and _GRANULAR_SUFFIX_RE.fullmatch(scope[len(known_scope):])
                for known_scope in scopes):
            continue
        meant = folded.get(scope.casefold()) or next(
            iter(difflib.get_close_matches(scope, scopes, n=1, cutoff=0.8)),
            None)
        if meant is not None:
            found.append((key, meant))
    return found
