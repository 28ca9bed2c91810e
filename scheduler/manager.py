"""The scheduler's operations, independent of how they are called.

The RPC endpoint (scheduler/rpc/server.py), the demo and the tests call a
``SchedulerManager``; it validates the request spec against the published
JSON schema, runs the filter scheduler and claims the chosen hosts in the
database so that concurrent schedulers never double-book a host.

``select_destinations`` in order:

1. Validation, before anything else: ``request_spec`` against
   ``scheduler/schemas/request_spec.json`` (Draft 2020-12),
   ``instance_uuids`` against its ``$defs/instance_uuids``, then the
   extra specs and hints the filters parse. Errors are InvalidRequest
   naming the field: ``request_spec.flavor.vcpus: 'two' is not of type
   'integer'``.
2. With ``[scheduler] cluster_lock``, the rest runs holding the database
   lock ``cluster:<cluster or ->``.
3. Refresh the host cache, decide, and claim each instance's chosen
   host, else its alternates in order (``scheduler.claims``). When all of
   an instance's candidates were taken by concurrent schedulers, the
   cache is refreshed and the remaining instances decided again, up to
   ``[scheduler] max_claim_rounds`` times.
4. Idempotency: an instance that already holds a claim gets it back,
   never a second one. Its claim is found when the insert of a new one
   hits the unique ``instance_uuid``, or, when the decision found no
   room (the instance's own claims may be what fills the fleet), by a
   lookup after which the instances still without a claim are placed
   again. The common path thus pays no lookup.
5. If an instance fits nowhere, the claims this call made are released
   before NoValidHost is raised (a release the database refuses is
   retried in the background until it succeeds, and kept on disk
   meanwhile in case the service stops first:
   ``claims.DeferredReleases``); with ``[scheduler]
   pending_retry_timeout`` and pending claims in the cluster, the whole
   request is first retried until the timeout.
"""

import contextlib
import dataclasses
import functools
import importlib.resources
import json
import reprlib
import threading
import time
import uuid
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import TypeVar

import jsonschema
from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from scheduler import claims
from scheduler import cluster_policy
from scheduler import exception
from scheduler import filter_scheduler
from scheduler import host_manager as hm
from scheduler import observability
from scheduler import request_values
from scheduler.balancer.planner import BalancePlanner
from scheduler.db import api as db_api
from scheduler.db import locks
from scheduler.filters import json_filter
from scheduler.live_policies import LivePolicies
from scheduler.release_journal import ReleaseJournal
from scheduler.release_journal import journal_directory
from scheduler.request_spec import RequestSpec
from scheduler.request_values import field as _field

LOG = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Seconds between the attempts of a request waiting for pending claims
#: (``[scheduler] pending_retry_timeout``).
PENDING_POLL_INTERVAL = 0.5

# A query hint given as a decoded list is a tree the schema cannot bound
# cheaply: more elements than this are refused before JsonFilter compiles
# it.
_MAX_QUERY_ELEMENTS = 10000
_MAX_QUERY_STRING = 255

_short_repr = reprlib.Repr()
_short_repr.maxstring = 60
_short_repr.maxother = 60
_short_repr.maxlist = _short_repr.maxtuple = 5
_short_repr.maxdict = 5
_short_repr.maxlevel = 3


class LockHoldTimeout(exception.NoValidHost):
    """A scheduling pass held the cluster lock past ``[scheduler]
    lock_hold_timeout``; it stopped, released its claims and the lock.

    A NoValidHost, so that it reaches RPC callers as the "could not
    place" answer they already handle, with its own message.
    """


class _Unplaceable(Exception):
    """An instance of the request fits nowhere (internal)."""

    def __init__(self, summary: str, pending: bool):
        self.summary = summary
        #: Pending claims existed in the request's cluster.
        self.pending = pending
        super().__init__(summary)


# Validation
#
# jsonschema is the authority and writes the error messages, but walking a
# full request spec with it costs about half a millisecond, a quarter of
# the whole decision. The schema is therefore also compiled into plain
# Python predicates (``_compile``) that answer "valid?" in a few
# microseconds; only a request they do not accept goes through jsonschema,
# which finds the error to report. A predicate may wrongly answer False
# (that only costs time: jsonschema then accepts the request), never
# wrongly True; tests/unit/test_manager.py fuzzes both against each
# other. A schema using a keyword the compiler does not know disables the
# fast path instead of being checked differently.

_DRAFT = jsonschema.Draft202012Validator


def _type_keyword(validator, types, instance, schema):
    types = types if isinstance(types, list) else [types]
    if not any(validator.is_type(instance, t) for t in types):
        yield jsonschema.ValidationError(
            f"{_short(instance)} is not of type "
            f"{' or '.join(repr(t) for t in types)}")


def _max_items_keyword(validator, maximum, instance, schema):
    if validator.is_type(instance, "array") and len(instance) > maximum:
        yield jsonschema.ValidationError(
            f"{len(instance)} items, at most {maximum} allowed")


def _min_items_keyword(validator, minimum, instance, schema):
    if validator.is_type(instance, "array") and len(instance) < minimum:
        yield jsonschema.ValidationError(
            f"at least {minimum} item(s) required")


def _has_duplicates(items: list) -> bool:
    if all(isinstance(item, str) for item in items):
        return len(set(items)) != len(items)
    return any(_json_equal(one, other) for index, one in enumerate(items)
               for other in items[index + 1:])


def _unique_items_keyword(validator, unique, instance, schema):
    if (unique and validator.is_type(instance, "array")
            and _has_duplicates(instance)):
        yield jsonschema.ValidationError("has duplicate items")


def _max_properties_keyword(validator, maximum, instance, schema):
    if validator.is_type(instance, "object") and len(instance) > maximum:
        yield jsonschema.ValidationError(
            f"{len(instance)} keys, at most {maximum} allowed")


def _max_length_keyword(validator, maximum, instance, schema):
    if validator.is_type(instance, "string") and len(instance) > maximum:
        yield jsonschema.ValidationError(
            f"{_short(instance)} is too long ({len(instance)} "
            f"characters, at most {maximum})")


def _json_equal(one: object, other: object) -> bool:
    # JSON equality: true is not 1, 1 is 1.0.
    if isinstance(one, bool) or isinstance(other, bool):
        return type(one) is type(other) and one == other
    if _is_number(one) and _is_number(other):
        return one == other
    return type(one) is type(other) and one == other


def _enum_keyword(validator, values, instance, schema):
    if not any(_json_equal(instance, value) for value in values):
        yield jsonschema.ValidationError(
            f"{_short(instance)} is not one of "
            f"{', '.join(repr(v) for v in values)}")


def _format_keyword(validator, name, instance, schema):
    if validator.format_checker is None:
        return
    if not validator.format_checker.conforms(instance, name):
        yield jsonschema.ValidationError(
            f"{_short(instance)} is not a {name!r}")


# The standard validator with messages that quote a value only
# abbreviated: the stock ones repeat the whole offending value, a megabyte
# of it for a huge list.
_Validator = jsonschema.validators.extend(_DRAFT, validators={
    "type": _type_keyword,
    "maxItems": _max_items_keyword,
    "minItems": _min_items_keyword,
    "uniqueItems": _unique_items_keyword,
    "maxProperties": _max_properties_keyword,
    "maxLength": _max_length_keyword,
    "enum": _enum_keyword,
    "format": _format_keyword,
})

Predicate = Callable[[object], bool]

_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "$comment", "title",
                          "description"})
_STRING_KEYWORDS = frozenset({"maxLength", "minLength", "format"})
_ARRAY_KEYWORDS = frozenset({"maxItems", "minItems", "uniqueItems",
                             "items"})
_OBJECT_KEYWORDS = frozenset({"maxProperties", "required", "properties",
                              "additionalProperties", "propertyNames"})
_NUMBER_KEYWORDS = frozenset({"minimum", "maximum"})
_KNOWN_KEYWORDS = (_ANNOTATIONS | _STRING_KEYWORDS | _ARRAY_KEYWORDS
                   | _OBJECT_KEYWORDS | _NUMBER_KEYWORDS
                   | {"type", "enum", "$ref"})


class _Unsupported(Exception):
    pass


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPES: dict[str, Predicate] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    # JSON Schema: 2.0 is an integer; a bool is never a number.
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)
                          or isinstance(v, float) and v.is_integer()),
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _compile(schema: object, root: dict) -> Predicate:
    """A predicate true only for instances ``schema`` accepts; raises
    _Unsupported for keywords it does not implement."""
    if schema is True:
        return lambda _value: True
    if not isinstance(schema, dict) or set(schema) - _KNOWN_KEYWORDS:
        raise _Unsupported(schema)
    if "$ref" in schema:
        prefix = "#/$defs/"
        ref = schema["$ref"]
        if set(schema) - _ANNOTATIONS != {"$ref"} or not isinstance(
                ref, str) or not ref.startswith(prefix):
            raise _Unsupported(ref)
        return _compile(root["$defs"][ref[len(prefix):]], root)
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        type_checks = tuple(_TYPES[name] for name in names)
    else:
        type_checks = ()
    enum = schema.get("enum")
    if enum is not None and not all(v is None or isinstance(v, str)
                                    for v in enum):
        raise _Unsupported(enum)
    string = _compile_string(schema)
    array = _compile_array(schema, root)
    obj = _compile_object(schema, root)
    number = _compile_number(schema)

    def check(value: object) -> bool:
        if type_checks and not any(t(value) for t in type_checks):
            return False
        if enum is not None and not (
                (value is None or isinstance(value, str))
                and value in enum):
            return False
        if isinstance(value, str):
            return string(value)
        if isinstance(value, list):
            return array(value)
        if isinstance(value, dict):
            return obj(value)
        if _is_number(value):
            return number(value)
        return True

    return check


def _compile_string(schema: dict) -> Predicate:
    longest = schema.get("maxLength")
    shortest = schema.get("minLength", 0)
    fmt = schema.get("format")
    if fmt is not None and fmt != "uuid":
        raise _Unsupported(fmt)
    conforms = _DRAFT.FORMAT_CHECKER.conforms

    def check(value: str) -> bool:
        if longest is not None and len(value) > longest:
            return False
        if len(value) < shortest:
            return False
        return fmt is None or conforms(value, fmt)

    return check


def _compile_array(schema: dict, root: dict) -> Predicate:
    longest = schema.get("maxItems")
    shortest = schema.get("minItems", 0)
    unique = schema.get("uniqueItems", False)
    items = (_compile(schema["items"], root) if "items" in schema
             else None)

    def check(value: list) -> bool:
        # Bounds first: a huge list is refused before its items are seen.
        if longest is not None and len(value) > longest:
            return False
        if len(value) < shortest:
            return False
        if items is not None and not all(items(v) for v in value):
            return False
        if unique:
            try:
                # 1 and True collide in a set but not in JSON Schema: such
                # a "duplicate" only sends the request to jsonschema.
                return len(set(value)) == len(value)
            except TypeError:
                return False
        return True

    return check


def _compile_object(schema: dict, root: dict) -> Predicate:
    most = schema.get("maxProperties")
    required = tuple(schema.get("required", ()))
    properties = {name: _compile(sub, root)
                  for name, sub in schema.get("properties", {}).items()}
    additional = schema.get("additionalProperties", True)
    extra = None if additional is False else _compile(additional, root)
    names = (_compile(schema["propertyNames"], root)
             if "propertyNames" in schema else None)

    def check(value: dict) -> bool:
        if most is not None and len(value) > most:
            return False
        if not all(name in value for name in required):
            return False
        for name, item in value.items():
            if names is not None and not (isinstance(name, str)
                                          and names(name)):
                return False
            sub = properties.get(name) if isinstance(name, str) else None
            if sub is None:
                sub = extra
            if sub is None or not sub(item):
                return False
        return True

    return check


def _compile_number(schema: dict) -> Predicate:
    low = schema.get("minimum")
    high = schema.get("maximum")

    def check(value: float) -> bool:
        return ((low is None or value >= low)
                and (high is None or value <= high))

    return check


@functools.cache
def request_spec_schema() -> dict:
    """The published JSON schema of ``request_spec`` (package data);
    ``$defs/instance_uuids`` is the schema of ``instance_uuids``."""
    text = importlib.resources.files("scheduler").joinpath(
        "schemas", "request_spec.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    _DRAFT.check_schema(schema)
    return schema


@dataclasses.dataclass(frozen=True)
class _Checker:
    """jsonschema's validator of one schema and its compiled predicate
    (None when the schema is beyond the compiler)."""

    validator: jsonschema.protocols.Validator
    fast: Predicate | None
    root: str

    def check(self, instance: object) -> None:
        if self.fast is not None and self.fast(instance):
            return
        # The first error only, lazily: the schema orders each value's
        # bounds before its contents, so a huge list is refused without
        # looking at each item.
        error = next(iter(self.validator.iter_errors(instance)), None)
        if error is not None:
            raise exception.InvalidRequest(_describe(error, self.root))


def _checker(schema: dict, root: dict, name: str) -> _Checker:
    try:
        fast = _compile(schema, root)
    except _Unsupported as e:
        LOG.warning("The %s schema uses %s, which the fast validity check "
                    "does not know; every request is validated by "
                    "jsonschema alone", name, _short(e.args[0]))
        fast = None
    validator = _Validator(schema, format_checker=_DRAFT.FORMAT_CHECKER)
    return _Checker(validator, fast, name)


@functools.cache
def _checkers() -> tuple[_Checker, _Checker]:
    schema = request_spec_schema()
    uuids = {**schema["$defs"]["instance_uuids"], "$defs": schema["$defs"]}
    return (_checker(schema, schema, "request_spec"),
            _checker(uuids, schema, "instance_uuids"))


def _short(value: object) -> str:
    return _short_repr.repr(value)


def _describe(error: jsonschema.ValidationError, root: str) -> str:
    """``<field path>: <problem>``; the problem of a key (propertyNames)
    says so."""
    path = list(error.absolute_path)
    kind, value, instance = (error.validator, error.validator_value,
                             error.instance)
    if kind == "required":
        missing = [name for name in value if name not in instance]
        return f"{_field(root, path + missing[:1])}: required but missing"
    if kind == "additionalProperties" and value is False:
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(str(k) for k in instance if k not in known)
        return (f"{_field(root, path + extra[:1])}: unknown key (expected "
                f"one of {', '.join(known)})")
    message = error.message
    if len(message) > 200:
        message = message[:197] + "..."
    if "propertyNames" in error.relative_schema_path:
        message = f"key {message}"
    return f"{_field(root, path)}: {message}"


def _check_query(query: object) -> None:
    # Iterative: a deeply nested list must not exhaust the stack here.
    if not isinstance(query, list):
        return
    field = "request_spec.scheduler_hints.query"
    stack = [(query, 1)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > _MAX_QUERY_ELEMENTS:
            raise exception.InvalidRequest(
                f"{field}: more than {_MAX_QUERY_ELEMENTS} elements")
        if isinstance(node, list):
            if depth > json_filter.MAX_DEPTH:
                raise exception.InvalidRequest(
                    f"{field}: nested deeper than {json_filter.MAX_DEPTH}")
            stack.extend((child, depth + 1) for child in node)
        elif isinstance(node, dict):
            raise exception.InvalidRequest(
                f"{field}: {_short(node)} is an object; a query holds "
                "lists, strings, numbers, booleans and null")
        elif isinstance(node, str) and len(node) > _MAX_QUERY_STRING:
            raise exception.InvalidRequest(
                f"{field}: {_short(node)} is too long ({len(node)} "
                f"characters, at most {_MAX_QUERY_STRING})")


def validate_request(request_spec: object,
                     instance_uuids: object = None) -> tuple[dict, list]:
    """Check the wire format of a request (DESIGN §5).

    Returns ``(request_spec, instance_uuids)``: a copy of the spec with
    ``num_instances`` filled in (from ``instance_uuids`` when the spec
    omits it, else 1) and ``instance_uuids`` as a list (empty when not
    given). Raises InvalidRequest naming the first offending field. The
    extra specs are checked afterwards, by ``RequestSpec.from_dict`` and
    the filters.
    """
    spec_checker, uuids_checker = _checkers()
    spec_checker.check(request_spec)
    _check_query((request_spec.get("scheduler_hints") or {}).get("query"))
    request_values.check(request_spec, "request_spec")
    spec = dict(request_spec)
    if instance_uuids is None:
        spec.setdefault("num_instances", 1)
        return spec, []
    if isinstance(instance_uuids, tuple):
        instance_uuids = list(instance_uuids)
    uuids_checker.check(instance_uuids)
    request_values.check(instance_uuids, "instance_uuids")
    wanted = spec.setdefault("num_instances", len(instance_uuids))
    if wanted != len(instance_uuids):
        raise exception.InvalidRequest(
            f"instance_uuids: {len(instance_uuids)} uuid(s) for "
            f"request_spec.num_instances = {wanted}")
    return spec, list(instance_uuids)


# Counters


@dataclasses.dataclass
class ManagerStats:
    """What a SchedulerManager did since it started (logs, tests,
    benchmarks). Read with ``as_dict()``.

    Every count also moves the Prometheus counter of the process that
    ``observability.MANAGER_COUNTERS`` names for it.
    """

    #: select_destinations calls that passed validation.
    requests: int = 0
    #: Claims made (one per placed instance).
    claims: int = 0
    #: Instances answered with the claim they already held.
    idempotent: int = 0
    #: Claims refused by the database because a concurrent scheduler
    #: filled the node first (the next candidate was tried).
    conflicts: int = 0
    #: Decisions made again after every candidate of one was taken.
    redecisions: int = 0
    #: Requests answered with NoValidHost.
    no_valid_host: int = 0
    #: Claims released because a later instance of their request failed.
    rolled_back: int = 0
    #: Waits for pending claims (``pending_retry_timeout``).
    pending_waits: int = 0
    _lock: threading.Lock = dataclasses.field(
        default_factory=threading.Lock, repr=False, compare=False)
    _exported: dict = dataclasses.field(
        default_factory=lambda: observability.metrics().manager_counters,
        repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, count in counts.items():
                setattr(self, name, getattr(self, name) + count)
        for name, count in counts.items():
            counter = self._exported.get(name)
            if counter is not None:
                counter.inc(count)

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return {f.name: getattr(self, f.name)
                    for f in dataclasses.fields(self)
                    if not f.name.startswith("_")}


# The manager


def _weight(decision: filter_scheduler.Decision,
            node_id: int) -> float | None:
    """The node's weight in the decision, None when it was not a
    candidate."""
    weights = getattr(decision, "selected_weights", None)
    if weights and len(weights) == len(decision.selected):
        for host, weight in zip(decision.selected, weights, strict=True):
            if host.node_id == node_id:
                return weight
        return None
    # Candidates come first in results, so this stops after a few hosts.
    for result in decision.results:
        if result.host.node_id == node_id:
            return result.weight
    return None


def _host_entry(host: hm.HostState,
                decision: filter_scheduler.Decision) -> dict:
    return {"host": host.host, "nodename": host.nodename, "uuid": host.uuid,
            "weight": _weight(decision, host.node_id),
            "allocation_id": None}


def _claim_entry(claim: claims.Claim,
                 decision: filter_scheduler.Decision | None) -> dict:
    return {"host": claim.host, "nodename": claim.nodename,
            "uuid": claim.node_uuid,
            "weight": (None if decision is None
                       else _weight(decision, claim.node_id)),
            "allocation_id": claim.allocation_id}


def _pending_in_cluster(hosts: Sequence[hm.HostState],
                        cluster: str | None) -> bool:
    return any((h.vcpus_pending or h.memory_mb_pending)
               for h in hosts if cluster is None or h.cluster == cluster)


class SchedulerManager:
    """select_destinations / explain / release over one database.

    Thread-safe: one manager serves every RPC thread of a worker process;
    the filter schedulers and their host cache are shared, each call works
    on its own request objects and database connections.

    A request's ``cluster`` picks the filter scheduler: that of the
    cluster's policy (``[scheduler] cluster_policies``, else
    ``default_policy``), or ``scheduler`` for ``[filter_scheduler]``.
    ``scheduler`` may be given (tests: a seeded random generator); by
    default one is built from ``conf``.
    """

    def __init__(self, conf: cfg.ConfigOpts,
                 scheduler: filter_scheduler.FilterScheduler | None = None):
        self.conf = conf
        self.scheduler = scheduler or filter_scheduler.FilterScheduler(conf)
        self.host_manager = self.scheduler.host_manager
        self.policies = cluster_policy.load_policies(conf)
        schedulers = self.policies.schedulers(conf, self.host_manager)
        schedulers[None] = self.scheduler
        # The policies in use and their schedulers, swapped as one by
        # _use_policies so that a request never sees one without the other.
        self._active = (self.policies, schedulers)
        #: Plans balancing migrations (``balance()``, the periodic task).
        self.planner = BalancePlanner(conf, self.host_manager,
                                      self.policies)
        # Policies the REST API stores: read with each host refresh.
        self.live_policies = LivePolicies(conf, self.policies,
                                          self._use_policies)
        self.host_manager.refresh_hooks.append(self.live_policies.observe)
        self.claims = claims.Claims(conf)
        self.deferred_releases = claims.DeferredReleases(
            self.claims, journal=ReleaseJournal(journal_directory(conf)))
        self.stats = ManagerStats()

    # select_destinations

    def select_destinations(self, request_spec: dict,
                            instance_uuids: list[str] | None = None,
                            return_alternates: bool = False
                            ) -> list[list[dict]]:
        """``_select_destinations``, counted in the metrics and logged on
        one INFO line (``observability.DecisionReport``)."""
        report = observability.DecisionReport()
        try:
            selections = self._select_destinations(
                request_spec, instance_uuids, return_alternates, report)
        except exception.NoValidHost as e:
            report.finish("no_valid_host", detail=("summary", str(e)))
            raise
        except exception.InvalidRequest as e:
            report.finish("invalid_request", detail=("error", str(e)))
            raise
        except Exception as e:
            report.finish("error", detail=(
                "error", f"{type(e).__name__}: {db_api.one_line(e)}"))
            raise
        report.finish("placed", chosen=[str(entries[0]["host"])
                                        for entries in selections])
        return selections

    def _select_destinations(self, request_spec: dict,
                             instance_uuids: list[str] | None,
                             return_alternates: bool,
                             report: observability.DecisionReport
                             ) -> list[list[dict]]:
        """One list per instance: the claimed host, then (when
        ``return_alternates``) up to ``max_attempts - 1`` alternates.

        Each entry is ``{"host", "nodename", "uuid", "weight",
        "allocation_id"}`` (allocation_id None for alternates). Raises
        InvalidRequest naming the field for a malformed spec, NoValidHost
        with the filter histogram when an instance does not fit.

        ``uuid`` is the compute node's uuid. An instance that already
        holds a claim gets it back (same allocation_id and host); its
        weight and alternates come from this call's decision, or are
        None and absent when no decision placed it. Without
        ``instance_uuids`` each instance is claimed under a new uuid equal
        to its allocation_id, which is then what ``release`` takes.
        Database errors raise ``claims.DatabaseError`` after the claims
        of this call were released; lock waits past ``[scheduler]
        lock_acquire_timeout`` raise ``locks.LockTimeout``.
        """
        spec_dict, uuids = validate_request(request_spec, instance_uuids)
        anonymous = not uuids
        if anonymous:
            uuids = [str(uuid.uuid4())
                     for _ in range(spec_dict["num_instances"])]
        # Extra specs and hints are checked before anything is locked or
        # claimed; the spec is then reused by the first decision.
        spec = self._spec(spec_dict, uuids)
        report.instances = len(uuids)
        report.cluster = spec.cluster
        policy = self.policies.for_cluster(spec.cluster)
        report.policy = None if policy is None else policy.label
        self._scheduler(spec).validate(spec)
        self.stats.add(requests=1)
        opts = self.conf.scheduler
        deadline = time.monotonic() + opts.pending_retry_timeout
        while True:
            try:
                with self._database_errors("select_destinations"):
                    return self._serialised(
                        spec_dict.get("cluster"),
                        functools.partial(self._place, spec_dict, spec,
                                          uuids, anonymous,
                                          return_alternates, report))
            except _Unplaceable as e:
                left = deadline - time.monotonic()
                if not e.pending or left <= 0:
                    self.stats.add(no_valid_host=1)
                    raise exception.NoValidHost(e.summary) from None
                LOG.info("No host for %s yet, but pending claims exist in "
                         "cluster %s; retrying for up to %.1f s more: %s",
                         spec.flavor.name or "request",
                         spec.cluster or "(any)", left, e.summary)
                self.stats.add(pending_waits=1)
                time.sleep(min(PENDING_POLL_INTERVAL, left))
                spec = self._spec(spec_dict, uuids)
            except exception.NoValidHost:
                self.stats.add(no_valid_host=1)
                raise

    def _spec(self, spec_dict: dict,
              uuids: list[str] | None = None) -> RequestSpec:
        if uuids:
            spec_dict = {**spec_dict, "num_instances": len(uuids)}
        return RequestSpec.from_dict(
            spec_dict, scope=self.conf.metrics.extra_specs_scope,
            instance_uuids=uuids)

    def _serialised(self, cluster: str | None,
                    run: Callable[[float | None], _T]) -> _T:
        """``run(hold_deadline)``, under the cluster lock when
        ``[scheduler] cluster_lock`` is set."""
        opts = self.conf.scheduler
        if not opts.cluster_lock:
            return run(None)
        name = f"cluster:{cluster or '-'}"
        with locks.database_lock(db_api.get_engine(self.conf), name,
                                 opts.lock_acquire_timeout):
            started = time.monotonic()
            limit = opts.lock_hold_timeout
            result = run(started + limit if limit > 0 else None)
            held = time.monotonic() - started
            if 0 < limit < held:
                LOG.warning("Scheduling pass held lock %s for %.1f s, more "
                            "than [scheduler] lock_hold_timeout (%g s); "
                            "its last step had already started, so it kept "
                            "its claims", name, held, limit)
            return result

    def _check_hold(self, hold_deadline: float | None,
                    cluster: str | None) -> None:
        if hold_deadline is None or time.monotonic() <= hold_deadline:
            return
        limit = self.conf.scheduler.lock_hold_timeout
        name = f"cluster:{cluster or '-'}"
        LOG.warning("Scheduling pass held lock %s for more than "
                    "[scheduler] lock_hold_timeout (%g s); stopping it, "
                    "releasing its claims and the lock", name, limit)
        raise LockHoldTimeout(
            f"scheduling in {name} took longer than [scheduler] "
            f"lock_hold_timeout ({limit:g} s); nothing was claimed, "
            "try again")

    def _place(self, spec_dict: dict, first_spec: RequestSpec,
               uuids: list[str], anonymous: bool, return_alternates: bool,
               report: observability.DecisionReport,
               hold_deadline: float | None) -> list[list[dict]]:
        entries: dict[str, list[dict]] = {}
        made: list[claims.Claim] = []
        try:
            try:
                self._claim_all(spec_dict, first_spec, uuids, anonymous,
                                hold_deadline, entries, made, report)
            except _Unplaceable:
                # Existing claims are looked up only now, off the common
                # path: a retried request for instances holding claims
                # gets them back through the unique instance_uuid when
                # its claims are inserted, and here when the fleet
                # looked full (its own claims may be what fills it).
                if anonymous or not self._held(uuids, entries):
                    raise
                self._claim_all(spec_dict, None, uuids, anonymous,
                                hold_deadline, entries, made, report)
        except BaseException:
            # Nothing half-claimed: undo this call's claims (never those
            # the instances held before it) whatever went wrong.
            self._roll_back(made)
            raise
        if not return_alternates:
            return [entries[u][:1] for u in uuids]
        return [entries[u] for u in uuids]

    def _held(self, uuids: list[str],
              entries: dict[str, list[dict]]) -> bool:
        """Add the claims some instances still without an entry hold;
        False when there are none."""
        held = self.claims.find([u for u in uuids if u not in entries])
        # A claim released in the background meanwhile is not held.
        held = {instance: claim for instance, claim in held.items()
                if self._take_over(claim)}
        for instance, claim in held.items():
            entries[instance] = [_claim_entry(claim, None)]
        self.stats.add(idempotent=len(held))
        return bool(held)

    def _claim_all(self, spec_dict: dict, first_spec: RequestSpec | None,
                   uuids: list[str], anonymous: bool,
                   hold_deadline: float | None,
                   entries: dict[str, list[dict]],
                   made: list[claims.Claim],
                   report: observability.DecisionReport) -> None:
        """Decide and claim for every instance without an entry; raises
        _Unplaceable when one fits nowhere or loses every round."""
        rounds = self.conf.scheduler.max_claim_rounds
        todo = [u for u in uuids if u not in entries]
        taken: list[hm.HostState] = []
        for round_number in range(1, rounds + 1):
            if not todo:
                return
            self._check_hold(hold_deadline, spec_dict.get("cluster"))
            if round_number > 1:
                self.stats.add(redecisions=1)
            # The validated spec serves the first decision; later ones
            # need a fresh one (select() records group members in it).
            spec = (first_spec if first_spec is not None
                    and round_number == 1 else self._spec(spec_dict, todo))
            # The scheduler refreshes the host cache itself; after a
            # conflict, the refresh reads the nodes whose claims beat ours
            # (their generation moved), unless those committed late.
            hosts = self._hosts_not_known_full(taken)
            try:
                decisions = self._scheduler(spec).select(spec, hosts)
            except exception.NoValidHost as e:
                known = hosts or self.host_manager.host_states()
                report.candidates, report.hosts = 0, len(known)
                raise _Unplaceable(str(e), _pending_in_cluster(
                    known, spec.cluster)) from None
            report.candidates = decisions[-1].candidates
            report.hosts = decisions[-1].hosts
            for instance, decision in zip(todo, decisions, strict=True):
                entry = self._claim_one(spec, instance, decision, anonymous,
                                        hold_deadline, made, taken)
                if entry is None:
                    break  # decide again for this one and the rest
                entries[instance] = entry
            todo = [u for u in todo if u not in entries]
        if todo:
            raise _Unplaceable(
                f"{len(todo)} instance(s) could not be claimed in "
                f"{rounds} decision round(s): every candidate was filled "
                f"by concurrent requests first (last ones: "
                f"{', '.join(h.host for h in taken[-5:])})", pending=False)

    def _hosts_not_known_full(self, taken: list[hm.HostState]
                              ) -> list[hm.HostState] | None:
        """None (every host, from the scheduler's own cache) until a claim
        of this request conflicted; then the cached hosts but those found
        full whose cache entry has not changed since.

        A claim committed with a change time older than the cache's
        watermark reaches the cache only at its next overlap-window check;
        until then the cache would offer the same full node again and
        again, round after round.
        """
        if not taken:
            return None
        # As cached when its claim conflicted.
        full = {host.node_id: host.generation for host in taken}
        hosts = self.host_manager.host_states()
        fresh = [host for host in hosts
                 if full.get(host.node_id, -1) != host.generation]
        return fresh or hosts

    def _claim_one(self, spec: RequestSpec, instance: str,
                   decision: filter_scheduler.Decision, anonymous: bool,
                   hold_deadline: float | None, made: list[claims.Claim],
                   taken: list[hm.HostState]) -> list[dict] | None:
        """Claim the chosen host, else the alternates in order; the
        instance's reply entries, or None when every candidate was
        full."""
        flavor = spec.flavor
        usage = claims.Usage(flavor.vcpus, flavor.memory_mb,
                             flavor.disk_gb)
        for index, host in enumerate(decision.selected):
            self._check_hold(hold_deadline, spec.cluster)
            allocation_id = instance if anonymous else str(uuid.uuid4())
            try:
                claim = self._claim_kept(host.node_id, instance, usage,
                                         spec.group, allocation_id)
            except claims.ClaimConflict as e:
                self.stats.add(conflicts=1)
                taken.append(host)
                LOG.debug("%s; trying the next candidate", e)
                continue
            except sa_exc.SQLAlchemyError:
                # The connection may have dropped after the database
                # applied the claim: roll it back with the others, which
                # releases it if it exists (later, if the database is
                # away), so that nothing half-claimed remains.
                made.append(claims.Claim(
                    allocation_id, instance, host.node_id, host.uuid,
                    host.host, host.nodename, usage.vcpus, usage.memory_mb,
                    usage.disk_gb))
                raise
            if claim.existing:
                self.stats.add(idempotent=1)
            else:
                made.append(claim)
                self.stats.add(claims=1)
            if claim.generation is not None:
                self.host_manager.record_claim(
                    claim.node_id, claim.generation, claim.changed_at,
                    instance, usage.vcpus, usage.memory_mb,
                    usage.disk_gb, spec.group)
            # An existing claim may be on a later candidate: it is not
            # its own alternate.
            return [_claim_entry(claim, decision)] + [
                _host_entry(h, decision)
                for h in decision.selected[index + 1:]
                if h.node_id != claim.node_id]
        return None

    def _claim_kept(self, node_id: int, instance: str, usage: claims.Usage,
                    group: str | None, allocation_id: str) -> claims.Claim:
        """``Claims.claim``, but an existing claim of the instance is
        taken over (``_take_over``), and one freed by a background release
        while it was looked up is not handed out: the node is claimed
        anew (a failed request's claim, released as its retry found
        it)."""
        while True:
            claim = self.claims.claim(node_id, instance, usage, group=group,
                                      allocation_id=allocation_id)
            if not claim.existing or self._take_over(claim):
                return claim
            LOG.info("Claim %s of instance %s was released in the "
                     "background as it was found; claiming again",
                     claim.allocation_id, instance)

    def _take_over(self, claim: claims.Claim) -> bool:
        """Hand out an existing claim of an instance: no release that a
        failed request of it left pending, here or in another worker, may
        free it afterwards. False when it was freed already."""
        return (self.deferred_releases.cancel(claim.allocation_id)
                and self.claims.keep(claim))

    def _roll_back(self, made: list[claims.Claim]) -> None:
        for claim in reversed(made):
            try:
                self.claims.release_allocation(claim.allocation_id)
            except Exception as e:
                # Whatever failed, the remaining claims are still undone.
                LOG.error("Could not release claim %s of instance %s on "
                          "%s after a failed request (%s); retrying in the "
                          "background", claim.allocation_id,
                          claim.instance_uuid, claim.host,
                          db_api.one_line(e))
                self.deferred_releases.add(claim)
            else:
                self.stats.add(rolled_back=1)

    @contextlib.contextmanager
    def _database_errors(self, operation: str) -> Iterator[None]:
        try:
            yield
        except sa_exc.SQLAlchemyError as e:
            hint = ("the database is unreachable, try again later"
                    if db_api.is_retriable(e) else "the request was rolled "
                    "back")
            raise claims.DatabaseError(
                f"{operation} failed on a database error ({hint}): "
                f"{db_api.one_line(e)}") from e

    # explain / release

    def explain(self, request_spec: dict) -> dict:
        """The decision for one instance without claiming (DESIGN §7
        JSON form: selected, summary, hosts)."""
        spec_dict, _ = validate_request(request_spec)
        spec = self._spec(spec_dict)
        policies, _ = self._active
        with self._database_errors("explain"):
            result = self._scheduler(spec).explain(spec).as_dict()
        # Which policy decided, with the version of an API-stored one.
        policy = policies.for_cluster(spec.cluster)
        result["policy"] = None if policy is None else policy.label
        return result

    def _scheduler(self, spec: RequestSpec
                   ) -> filter_scheduler.FilterScheduler:
        """The filter scheduler of the request's cluster policy."""
        policies, schedulers = self._active
        return schedulers[policies.name_for(spec.cluster)]

    def _use_policies(self, policies: cluster_policy.PolicySet) -> None:
        """Put the live PolicySet in use: new filter schedulers for new
        or changed policies only, then one swap."""
        old_policies, old = self._active
        schedulers = {None: self.scheduler}
        for name, policy in policies.policies.items():
            if old_policies.policies.get(name) == policy and name in old:
                schedulers[name] = old[name]
            else:
                schedulers[name] = filter_scheduler.FilterScheduler(
                    self.conf, host_manager=self.host_manager,
                    pipeline=policy.pipeline())
        self._active = (policies, schedulers)
        self.policies = policies
        self.planner.use_policies(policies)

    # balance

    def balance(self, cluster: str | None = None, dry_run: bool = False,
                migration_policy: str | None = None) -> list[dict]:
        """One balancing tick now (``BalancePlanner.balance``): the
        migrations planned, at most one per cluster, or that would be
        when ``dry_run``; ``migration_policy`` overrides the clusters'
        migration policy."""
        with self._database_errors("balance"):
            return [migration.as_dict() for migration in self.planner.balance(
                cluster, dry_run, migration_policy=migration_policy)]

    def resume_releases(self) -> int:
        """Release, in the background, the claims that stopped scheduler
        processes left awaiting release (``DeferredReleases``); returns
        how many. Called when a service worker starts."""
        return self.deferred_releases.adopt_orphans()

    def release(self, instance_uuid: str) -> bool:
        """Free the instance's claim; False when it held none."""
        if not isinstance(instance_uuid, str):
            raise exception.InvalidRequest(
                f"instance_uuid: {_short(instance_uuid)} is not of type "
                "'string'")
        if not _DRAFT.FORMAT_CHECKER.conforms(instance_uuid, "uuid"):
            raise exception.InvalidRequest(
                f"instance_uuid: {_short(instance_uuid)} is not a 'uuid'")
        with self._database_errors("release"):
            return self.claims.release(instance_uuid)
