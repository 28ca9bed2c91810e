"""Request bodies: size, JSON, and field checks that name the field.

Every check raises ApiError 400 (413 for size) with the field's dotted
path, e.g. ``weights[1].factor: expected an integer, got "2"``.
"""

import json
from collections.abc import Mapping
from collections.abc import Sequence

import webob

from scheduler.api import errors
from scheduler.common.abridge import abridged

#: docs/api.md: larger bodies get 413 before they are read in full.
MAX_BODY = 1024 * 1024
#: Deeper bodies get 400; the API's own bodies nest 3 levels. json.loads
#: recurses once per level: far deeper ones end in its RecursionError.
MAX_DEPTH = 32
_TOO_DEEP = object()
_TYPE_NAMES = {str: "a string", int: "an integer", dict: "an object",
               list: "a list", bool: "a boolean"}


def read_json(request: webob.Request) -> dict:
    """The request's JSON object; 413 past MAX_BODY, 400 otherwise."""
    length = request.content_length
    if length is not None and length > MAX_BODY:
        raise errors.ApiError(413, f"request body: {length} bytes, the "
                              f"limit is {MAX_BODY}")
    raw = _read(request)
    try:
        value = json.loads(raw.decode("utf-8"),
                           parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError) as e:
        raise errors.bad_request("request body",
                                 f"malformed JSON: {e}") from None
    except RecursionError:
        value = _TOO_DEEP  # deeper than the interpreter's stack
    if value is _TOO_DEEP or _depth(value) > MAX_DEPTH:
        raise errors.bad_request("request body", "JSON nested deeper "
                                 f"than {MAX_DEPTH} levels")
    if not isinstance(value, dict):
        raise errors.bad_request("request body", "expected a JSON object")
    return value


def _read(request: webob.Request) -> bytes:
    try:
        raw = request.body_file.read(MAX_BODY + 1)
    except Exception as e:
        # Whatever the server's wsgi.input raises (a malformed chunked
        # encoding, a client gone mid-body) is the request's fault.
        raise errors.bad_request("request body", "could not be read: "
                                 f"{type(e).__name__}: {e}") from None
    if len(raw) > MAX_BODY:
        raise errors.ApiError(413, f"request body: over {MAX_BODY} bytes")
    return raw


def _depth(value: object) -> int:
    """How many arrays and objects deep ``value`` nests; iterative, in
    one pass over its items."""
    deepest = 0
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = (item.values() if isinstance(item, dict)
                    else item if isinstance(item, list) else None)
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        pending.extend((child, depth + 1) for child in children)
    return deepest


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def check_fields(path: str, value: Mapping, allowed: Sequence[str]) -> None:
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        where = f"{path}." if path else ""
        raise errors.bad_request(
            f"{where}{unknown[0]}",
            f"unknown field; expected one of {', '.join(allowed)}")


def typed(path: str, value: object, kind: type,
          nullable: bool = False) -> object:
    if value is None and nullable:
        return None
    # bool is an int to Python, never to the API.
    if isinstance(value, kind) and not (kind is int
                                        and isinstance(value, bool)):
        return value
    expected = _TYPE_NAMES[kind] + (" or null" if nullable else "")
    raise errors.bad_request(path, f"expected {expected}, got "
                             f"{abridged(json.dumps(value))}")


def text(path: str, value: object, max_length: int = 255,
         nullable: bool = False, empty: bool = False) -> str | None:
    result = typed(path, value, str, nullable)
    if result is None:
        return None
    if not empty and not result.strip():
        raise errors.bad_request(path, "must not be empty")
    if len(result) > max_length:
        raise errors.bad_request(path, f"longer than {max_length} "
                                 "characters")
    if "\x00" in result or any(0xD800 <= ord(c) <= 0xDFFF for c in result):
        raise errors.bad_request(path, "holds characters that cannot be "
                                 "stored")
    return result


def choice(path: str, value: object, choices: Sequence[str | None]) -> object:
    if value in choices:
        return value
    names = ", ".join("null" if c is None else c for c in choices)
    raise errors.bad_request(path, f"expected one of {names}, got "
                             f"{abridged(json.dumps(value))}")
