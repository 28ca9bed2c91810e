"""What the router checks of a request before any handler runs: the
path decoded without failing on bytes that are not UTF-8, its
parameters, and the Content-Type of a body.

Refusals name what is at fault (a path parameter, the Content-Type
header) like the body checks name their field."""

from collections.abc import Mapping

import webob

from scheduler.api import errors

#: Methods whose requests carry a body even when it is empty.
BODY_METHODS = ("POST", "PUT", "PATCH")
JSON = "application/json"
_UTF8 = ("utf-8", "utf8")


def raw_path(environ: Mapping) -> str:
    """PATH_INFO as text; bytes that are not UTF-8 become lone
    surrogates (surrogateescape) instead of raising."""
    path = environ.get("PATH_INFO", "")
    try:
        # PEP 3333: the server gives the bytes as latin-1 characters.
        data = path.encode("latin-1")
    except UnicodeEncodeError:
        return path  # a server that decoded it already
    return data.decode("utf-8", "surrogateescape")


def shown(text: str) -> str:
    """``text`` for a message or a log line: undecodable bytes as
    ``\\xff`` escapes, which encode anywhere."""
    return "".join(_escape(c) if 0xD800 <= ord(c) <= 0xDFFF else c
                   for c in text)


def _escape(surrogate: str) -> str:
    code = ord(surrogate)
    if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape kept
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def loggable_path(request: webob.Request) -> str:
    """The request's path for the log; never raises (webob's
    request.path does on bytes that are not UTF-8)."""
    try:
        # Escaped control characters: a %0a cannot forge a log line.
        return "".join(c if c.isprintable() else repr(c)[1:-1]
                       for c in shown(raw_path(request.environ)))
    except Exception:  # a non-str PATH_INFO: still log something
        return repr(request.environ.get("PATH_INFO"))


def check_parameters(parameters: Mapping[str, str]) -> None:
    """400 naming the path parameter that no database could store or
    compare: bytes that are not UTF-8 (percent-encoded, e.g. %ff or an
    encoded surrogate %ed%a0%80) or NUL."""
    for name, value in parameters.items():
        if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            raise errors.bad_request(name, "not valid UTF-8: "
                                     f"{shown(value)}")
        if "\x00" in value:
            raise errors.bad_request(name, "holds characters that cannot "
                                     "be stored")


def carries_body(request: webob.Request) -> bool:
    if request.method in BODY_METHODS:
        return True
    if "HTTP_TRANSFER_ENCODING" in request.environ:
        return True
    return bool(request.content_length)


def check_content_type(request: webob.Request) -> None:
    """415 for a body that is not application/json: a browser sends
    text/plain, form and multipart bodies cross-site without asking,
    with the Basic credentials it caches (CSRF)."""
    if not carries_body(request):
        return
    header = request.environ.get("CONTENT_TYPE", "")
    media, _, parameters = header.partition(";")
    if media.strip().lower() != JSON:
        got = repr(shown(header)) if header.strip() else "none"
        raise errors.ApiError(415, f"Content-Type: expected {JSON} for "
                              f"a request body, got {got}")
    for parameter in parameters.split(";"):
        key, _, value = parameter.partition("=")
        if (key.strip().lower() == "charset"
                and value.strip().strip('"').lower() not in _UTF8):
            raise errors.ApiError(415, f"Content-Type: the body must be "
                                  f"UTF-8 JSON, got {shown(header)!r}")
