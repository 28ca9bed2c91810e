"""API errors and their JSON form ``{"error": {code, title, message}}``."""

import http
import json

import webob


class ApiError(Exception):
    """An error answered as JSON; ``message`` names the field at fault."""

    def __init__(self, code: int, message: str,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.headers = headers or {}


def bad_request(field: str, problem: str) -> ApiError:
    return ApiError(400, f"{field}: {problem}")


def not_found(what: str, key: str) -> ApiError:
    return ApiError(404, f"no {what} {key!r}")


def conflict(message: str) -> ApiError:
    return ApiError(409, message)


def response(code: int, message: str,
             headers: dict[str, str] | None = None) -> webob.Response:
    title = http.HTTPStatus(code).phrase
    body = json.dumps({"error": {"code": code, "title": title,
                                 "message": message}})
    resp = webob.Response(status=code, body=body.encode(),
                          content_type="application/json", charset=None)
    for name, value in (headers or {}).items():
        resp.headers[name] = value
    return resp


def error_response(error: ApiError) -> webob.Response:
    return response(error.code, error.message, error.headers)
