"""Validation of a request's wire format (docs/architecture.md).

``validate_request`` checks ``request_spec`` against the published schema
(``scheduler.request.schema``), ``instance_uuids`` against its
``$defs/instance_uuids``, then what the schema cannot bound: the JsonFilter
query's depth and size, and strings no database can store
(``scheduler.request.values``). Errors are InvalidRequest naming the
field: ``request_spec.flavor.vcpus: 'two' is not of type 'integer'``.

Two validators, one answer. jsonschema-rs (compiled Rust) answers "is it
valid?" in about a microsecond; jsonschema, which walks a request in tens
of microseconds, is asked only about a request the fast check refused:
it finds the first error and ``scheduler.request.messages`` words it, so
that error texts do not depend on the fast check. The fast check may
wrongly refuse (that only costs time: jsonschema then accepts the
request), never wrongly accept; tests/unit/request/test_validation.py
fuzzes both against each other.

jsonschema-rs reads Python values as JSON, more leniently than
jsonschema: a tuple is an array to it, an ``enum.Enum`` member its value,
a ``Decimal`` a number, where jsonschema (and so the published contract)
refuses all three. A request reaches the fast check only when it is made
of what a JSON decoder returns, as every request off the wire is, and is
no larger than a valid request can be; any other goes to jsonschema.
jsonschema's ``uuid`` format is laxer than jsonschema-rs's (``int(text,
16)`` accepts ``_`` and a sign); such a value is only refused by the fast
check, then accepted by jsonschema.

The walk that tells a decoded-JSON request (``_scan``) also tells whether
``request_values`` would refuse one of its strings or numbers; only then
does its own walk, which keeps every value's path to name it, run.
"""

import dataclasses
import functools
import math

import jsonschema
import jsonschema_rs

from scheduler import exception
from scheduler.common.abridge import short
from scheduler.request import messages
from scheduler.request import values as request_values
from scheduler.request.schema import DRAFT
from scheduler.request.schema import instance_uuids_schema
from scheduler.request.schema import request_spec_schema

#: How deep a JsonFilter query list may nest; equal to
#: ``scheduler.filters.json_filter.MAX_DEPTH`` (a unit test keeps them
#: equal). Stated here so that the request layer needs no filter.
MAX_QUERY_DEPTH = 32
# A query hint given as a decoded list is a tree the schema cannot bound
# cheaply: more elements than this are refused before JsonFilter compiles
# it.
_MAX_QUERY_ELEMENTS = 10000
_MAX_QUERY_STRING = 255
_QUERY_FIELD = "request_spec.scheduler_hints.query"

# Exactly these types (not subclasses) are what json.loads returns.
_JSON_EXACT = frozenset({int, bool, type(None)})
# The largest request the schema admits holds about 20,000 values (lists
# and maps of at most 1,000, a query of at most _MAX_QUERY_ELEMENTS) and
# no string over 65,535 characters (its longest maxLength). A larger one
# is left to jsonschema without being read whole: it refuses the request
# at its first oversized value, as the schema orders its keywords for.
_FAST_MAX_VALUES = 32768
_FAST_MAX_TEXT = 65535


def _text_refused(text: str) -> bool:
    # request_values.text_problem, its common case (ASCII without NUL)
    # decided without a call.
    return "\0" in text or (not text.isascii()
                            and request_values.text_problem(text) is not None)


def _scan(value: object) -> tuple[bool, bool]:
    """One walk over ``value``: whether the fast check may judge it (it
    holds only dicts with str keys, lists, str, int, float, bool and
    None, which jsonschema-rs and jsonschema read alike, and is no larger
    than a valid request can be), and, when it may, whether
    ``request_values.check`` accepts it (without the path bookkeeping
    that check needs only to name a refused value)."""
    stack = [value]
    budget = _FAST_MAX_VALUES
    clean = True
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is str:
            if len(node) > _FAST_MAX_TEXT:
                return False, False
            clean = clean and not _text_refused(node)
        elif kind is dict or kind is list:
            budget -= len(node)
            if budget < 0:
                return False, False
            if kind is list:
                stack.extend(node)
                continue
            for key in node:
                if type(key) is not str or len(key) > _FAST_MAX_TEXT:
                    return False, False
                clean = clean and not _text_refused(key)
            stack.extend(node.values())
        elif kind is float:
            clean = clean and math.isfinite(node)
        elif kind not in _JSON_EXACT:
            return False, False
    return True, clean


@dataclasses.dataclass(frozen=True)
class _Checker:
    """One schema's fast validity check and the jsonschema validator that
    words its errors."""

    validator: jsonschema.protocols.Validator
    compiled: jsonschema_rs.Validator
    root: str

    def fast(self, instance: object, decoded_json: bool | None = None
             ) -> bool:
        """True only when the schema accepts ``instance``;
        ``decoded_json`` is ``_scan(instance)[0]`` when known (False:
        leave it to jsonschema)."""
        if decoded_json is None:
            decoded_json = _scan(instance)[0]
        if not decoded_json:
            return False
        try:
            return self.compiled.is_valid(instance)
        except ValueError:  # a value it cannot convert: ask jsonschema
            return False

    def check(self, instance: object,
              decoded_json: bool | None = None) -> None:
        """InvalidRequest naming the first error of ``instance``."""
        if self.fast(instance, decoded_json):
            return
        # The first error only, lazily: the schema orders each value's
        # bounds before its contents, so a huge list is refused without
        # looking at each item.
        error = next(iter(self.validator.iter_errors(instance)), None)
        if error is not None:
            raise exception.InvalidRequest(messages.describe(error,
                                                             self.root))


def _checker(schema: dict, name: str) -> _Checker:
    return _Checker(
        messages.Validator(schema, format_checker=DRAFT.FORMAT_CHECKER),
        # Formats are only annotations in Draft 2020-12 unless asked for;
        # jsonschema is given its format checker above, so this too.
        jsonschema_rs.Draft202012Validator(schema, validate_formats=True),
        name)


@functools.cache
def _checkers() -> tuple[_Checker, _Checker]:
    """The checkers of ``request_spec`` and of ``instance_uuids``."""
    return (_checker(request_spec_schema(), "request_spec"),
            _checker(instance_uuids_schema(), "instance_uuids"))


def _check_query(query: object) -> None:
    # Iterative: a deeply nested list must not exhaust the stack here.
    if not isinstance(query, list):
        return
    stack = [(query, 1)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > _MAX_QUERY_ELEMENTS:
            raise exception.InvalidRequest(
                f"{_QUERY_FIELD}: more than {_MAX_QUERY_ELEMENTS} elements")
        if isinstance(node, list):
            if depth > MAX_QUERY_DEPTH:
                raise exception.InvalidRequest(
                    f"{_QUERY_FIELD}: nested deeper than {MAX_QUERY_DEPTH}")
            stack.extend((child, depth + 1) for child in node)
        elif isinstance(node, dict):
            raise exception.InvalidRequest(
                f"{_QUERY_FIELD}: {short(node)} is an object; a "
                "query holds lists, strings, numbers, booleans and null")
        elif isinstance(node, str) and len(node) > _MAX_QUERY_STRING:
            raise exception.InvalidRequest(
                f"{_QUERY_FIELD}: {short(node)} is too long "
                f"({len(node)} characters, at most {_MAX_QUERY_STRING})")


def validate_request(request_spec: object,
                     instance_uuids: object = None) -> tuple[dict, list]:
    """Check the wire format of a request (docs/architecture.md).

    Returns ``(request_spec, instance_uuids)``: a copy of the spec with
    ``num_instances`` filled in (from ``instance_uuids`` when the spec
    omits it, else 1) and ``instance_uuids`` as a list (empty when not
    given). Raises InvalidRequest naming the first offending field. The
    extra specs are checked afterwards, by ``RequestSpec.from_dict`` and
    the filters.
    """
    spec_checker, uuids_checker = _checkers()
    decoded_json, clean = _scan(request_spec)
    spec_checker.check(request_spec, decoded_json)
    _check_query((request_spec.get("scheduler_hints") or {}).get("query"))
    if not (decoded_json and clean):  # the walk that names the value
        request_values.check(request_spec, "request_spec")
    spec = dict(request_spec)
    if instance_uuids is None:
        spec.setdefault("num_instances", 1)
        return spec, []
    if isinstance(instance_uuids, tuple):
        instance_uuids = list(instance_uuids)
    decoded_json, clean = _scan(instance_uuids)
    uuids_checker.check(instance_uuids, decoded_json)
    if not (decoded_json and clean):
        request_values.check(instance_uuids, "instance_uuids")
    wanted = spec.setdefault("num_instances", len(instance_uuids))
    if wanted != len(instance_uuids):
        raise exception.InvalidRequest(
            f"instance_uuids: {len(instance_uuids)} uuid(s) for "
            f"request_spec.num_instances = {wanted}")
    return spec, list(instance_uuids)


def check_instance_uuid(instance_uuid: object) -> None:
    """InvalidRequest unless ``instance_uuid`` is a uuid string (the
    argument of ``release``)."""
    if not isinstance(instance_uuid, str):
        raise exception.InvalidRequest(
            f"instance_uuid: {short(instance_uuid)} is not of "
            "type 'string'")
    if not DRAFT.FORMAT_CHECKER.conforms(instance_uuid, "uuid"):
        raise exception.InvalidRequest(
            f"instance_uuid: {short(instance_uuid)} is not a "
            "'uuid'")
