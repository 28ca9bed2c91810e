"""JsonFilter: hosts must satisfy the ``query`` scheduler hint.

The query is a dialect of Nova's JsonFilter language: a JSON list ``[op,
arg, ...]`` whose arguments are literals, ``$variables`` naming host
attributes (Nova's documented names included: ``$free_ram_mb``,
``$free_disk_mb``, ``$hypervisor_hostname``, ``$total_usable_ram_mb``,
``$vcpus_total``, ``$vcpus_used``), or nested queries, e.g.::

    ["and", [">=", "$free_ram_mb", 1024],
            ["<", "$metrics.cpu.percent", 50]]

Where it differs from Nova (the operator guide's "differences from Nova"
lists them): comparisons with more than two arguments are chained
(``["<", 1, "$vcpus", 64]`` is 1 < vcpus < 64, where Nova compares the
first argument with each of the others); a variable the host lacks
fails the comparison, where Nova drops the argument; ``not`` takes one
argument; unknown operators and variables are refused with the request
instead of failing on every host; and ``$free_*`` include the
allocation ratio.

It is compiled by a small interpreter of its own; nothing in it is ever
handed to ``eval``.
"""

import collections.abc
import dataclasses
import datetime
import functools
import itertools
import json
import math
import operator

from compute_monitor.base import METRIC_NAME_RE
from scheduler.common.abridge import abridged
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.filters import nova_names
from scheduler.hosts.state import HostState
from scheduler.hosts.state import metrics_window
from scheduler.request import extra_specs
from scheduler.request.spec import RequestSpec

#: Deeper queries are refused: a hint is user input, and the evaluator
#: recurses.
MAX_DEPTH = 32

_VARIABLES: dict[str, collections.abc.Callable[[HostState], object]] = {
    **{name: operator.attrgetter(name) for name in (
        "free_ram_mb", "free_disk_gb", "free_vcpus", "vcpus", "memory_mb",
        "disk_gb", "cpu_allocation_ratio", "ram_allocation_ratio",
        "disk_allocation_ratio", "uuid", "host", "nodename", "cluster",
        "availability_zone", "num_instances")},
    # Nova's names, for queries written against Nova.
    **nova_names.NOVA_NAMES,
}

_COMPARISONS: dict[str, collections.abc.Callable[[object, object], bool]] = {
    "=": operator.eq,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}

# Fewest arguments each operator takes.
_ARITY = {**dict.fromkeys(_COMPARISONS, 2), "in": 2, "not": 1, "or": 1,
          "and": 1}

OPERATORS = tuple(_ARITY)


class InvalidQuery(extra_specs.InvalidExtraSpec):
    """The ``query`` scheduler hint is not a valid JsonFilter query."""

    def __init__(self, query: object, problem: str):
        text = abridged(query if isinstance(query, str) else repr(query),
                        203)
        super().__init__("query", query, problem,
                         f"invalid scheduler hint query={text}: {problem}")


@dataclasses.dataclass(frozen=True)
class _Context:
    host: HostState
    now: datetime.datetime
    max_age: float


@dataclasses.dataclass(frozen=True)
class _Variable:
    name: str
    getter: collections.abc.Callable[[_Context], object]

    def evaluate(self, ctx: _Context) -> object:
        return self.getter(ctx)


@dataclasses.dataclass(frozen=True)
class _Literal:
    value: object

    def evaluate(self, ctx: _Context) -> object:
        return self.value


@dataclasses.dataclass(frozen=True)
class _Expression:
    op: str
    args: tuple

    def evaluate(self, ctx: _Context) -> object:
        if self.op == "and":
            return all(bool(arg.evaluate(ctx)) for arg in self.args)
        if self.op == "or":
            return any(bool(arg.evaluate(ctx)) for arg in self.args)
        if self.op == "not":
            return not self.args[0].evaluate(ctx)
        values = [arg.evaluate(ctx) for arg in self.args]
        # An unknown value (a missing metric) satisfies no comparison,
        # where Nova would drop the argument and often pass the host.
        if self.op == "in":
            return values[0] is not None and values[0] in values[1:]
        if any(value is None for value in values):
            return False
        compare = _COMPARISONS[self.op]
        try:
            return all(compare(a, b) for a, b in itertools.pairwise(values))
        except TypeError:
            return False


class Query:
    """A validated query, ready to evaluate against hosts."""

    def __init__(self, root: _Expression, variables: tuple[_Variable, ...]):
        self._root = root
        #: The variables the query reads, in order of appearance.
        self.variables = variables

    def evaluate(self, host: HostState, now: datetime.datetime,
                 max_age: float) -> bool:
        return bool(self._root.evaluate(_Context(host, now, max_age)))

    def describe(self, host: HostState, now: datetime.datetime,
                 max_age: float) -> str:
        """``free_ram_mb=512, metrics.cpu.percent=None``: what the query
        saw on ``host``."""
        ctx = _Context(host, now, max_age)
        return ", ".join(f"{var.name}={var.evaluate(ctx)!r}"
                         for var in self.variables)


def _metric_getter(name: str) -> collections.abc.Callable[[_Context], object]:
    def get(ctx: _Context) -> object:
        return ctx.host.metric(name, ctx.now, ctx.max_age)
    return get


def _cpu_info_getter(
        path: list[str]) -> collections.abc.Callable[[_Context], object]:
    def get(ctx: _Context) -> object:
        value: object = ctx.host.cpu_info
        for key in path:
            if not isinstance(value, collections.abc.Mapping):
                return None
            value = value.get(key)
        return value
    return get


def _variable(name: str, query: object) -> _Variable:
    if name.startswith("metrics."):
        metric = name[len("metrics."):]
        if not METRIC_NAME_RE.match(metric):
            raise InvalidQuery(query, f"${name}: {metric!r} is not a dotted "
                               "lower-case metric name")
        return _Variable(name, _metric_getter(metric))
    if name.startswith("cpu_info."):
        path = name.split(".")[1:]
        if not all(path):
            raise InvalidQuery(query, f"${name}: empty key")
        return _Variable(name, _cpu_info_getter(path))
    getter = _VARIABLES.get(name)
    if getter is None:
        known = ", ".join(f"${n}" for n in _VARIABLES)
        raise InvalidQuery(
            query, f"unknown variable ${name} (expected one of {known}, "
            "$cpu_info.<key> or $metrics.<metric name>)")
    return _Variable(name, lambda ctx: getter(ctx.host))


def _is_literal(value: object) -> bool:
    # JSON's null has no meaning here, and NaN would compare false to
    # everything without saying why.
    if isinstance(value, bool | str):
        return True
    return isinstance(value, int | float) and math.isfinite(value)


def _compile(node: object, query: object, depth: int,
             variables: dict[str, _Variable]) -> _Expression:
    if depth > MAX_DEPTH:
        raise InvalidQuery(query, f"nested deeper than {MAX_DEPTH}")
    if not isinstance(node, list) or not node:
        raise InvalidQuery(query, f"{node!r} is not a list [operator, "
                           "argument, ...]")
    op = node[0]
    if not isinstance(op, str) or op not in _ARITY:
        raise InvalidQuery(query, f"unknown operator {op!r} (expected one "
                           f"of {', '.join(OPERATORS)})")
    raw_args = node[1:]
    if op == "not" and len(raw_args) != 1:
        raise InvalidQuery(query, "not takes exactly one argument")
    if len(raw_args) < _ARITY[op]:
        raise InvalidQuery(query, f"{op} takes at least {_ARITY[op]} "
                           "arguments")
    args = []
    for arg in raw_args:
        if isinstance(arg, list):
            args.append(_compile(arg, query, depth + 1, variables))
        elif isinstance(arg, str) and arg.startswith("$"):
            name = arg[1:]
            if name not in variables:
                variables[name] = _variable(name, query)
            args.append(variables[name])
        elif _is_literal(arg):
            args.append(_Literal(arg))
        else:
            raise InvalidQuery(query, f"argument {arg!r} is not a query, a "
                               "$variable, a string or a finite number")
    return _Expression(op, tuple(args))


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number")


@functools.lru_cache(maxsize=256)
def _compile_text(text: str) -> Query | None:
    try:
        decoded = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise InvalidQuery(text, f"not JSON ({exc})") from None
    return _compile_decoded(decoded, text)


# What Nova, too, treats as no query at all: every host passes.
_EMPTY_QUERIES = (None, [], {}, "")


def _compile_decoded(decoded: object, query: object) -> Query | None:
    if any(decoded == empty and type(decoded) is type(empty)
           for empty in _EMPTY_QUERIES):
        return None
    variables: dict[str, _Variable] = {}
    root = _compile(decoded, query, 1, variables)
    return Query(root, tuple(variables.values()))


def validate_query(query: object) -> Query | None:
    """The compiled ``query`` hint (a JSON string or a decoded list), None
    when there is no query; InvalidQuery when it is malformed. The
    scheduler calls it once per request, before any host is checked."""
    if query is None:
        return None
    if isinstance(query, str):
        if not query.strip():
            return None
        return _compile_text(query)
    return _compile_decoded(query, query)


class JsonFilter(BaseHostFilter):
    """Rejects hosts that do not satisfy the ``query`` scheduler hint.

    Operators: ``=``, ``<``, ``>``, ``<=``, ``>=`` (chained over all
    arguments), ``in`` (first argument equals one of the others),
    ``not``, ``or``, ``and``. Variables: ``$free_ram_mb``,
    ``$free_disk_gb``, ``$free_disk_mb``, ``$free_vcpus``, ``$vcpus``
    (``$vcpus_total``), ``$vcpus_used``, ``$memory_mb``
    (``$total_usable_ram_mb``), ``$disk_gb`` (``$total_usable_disk_gb``,
    ``$local_gb``),
    ``$disk_mb_used``, the three allocation ratios, ``$host``,
    ``$nodename`` (``$hypervisor_hostname``), ``$uuid``, ``$cluster``,
    ``$availability_zone``, ``$num_instances``,
    ``$cpu_info.<key>[.<key>...]`` and ``$metrics.<metric>`` (adjusted
    for pending claims; missing or older than ``[metrics] max_age`` is
    null, which fails any comparison). Requests without the hint, or
    with an empty one (``[]``, ``{}``), pass.
    """

    def applies(self, spec: RequestSpec) -> bool:
        return validate_query(spec.scheduler_hints.get("query")) is not None

    def validate_request(self, spec: RequestSpec) -> None:
        validate_query(spec.scheduler_hints.get("query"))

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        # Compiled once per request: a query given as a list is not
        # cached by validate_query().
        query = spec.memo("JsonFilter.query", lambda: validate_query(
            spec.scheduler_hints.get("query")))
        if query is None:
            return None
        window = metrics_window(spec, self.conf)
        if query.evaluate(host, window.now, window.max_age):
            return None
        return Rejection("query not satisfied",
                         query.describe(host, window.now, window.max_age))
