import json

import webob

"""Helpers shared by the API tests (unit and functional)."""



#: Each identity header an auth layer sets, with the value that would
#: make its sender an admin if it were believed.
SPOOFED = [
    ("X-Roles", "admin,reader,member"),
    ("X-Role", "admin"),
    ("X_Roles", "admin"),
    ("X-User-Name", "root"),
    ("X-User", "root"),
    ("X-User-Id", "root"),
    ("X-User-Domain-Name", "Default"),
    ("X-Project-Name", "admin"),
    ("X-Project-Id", "admin"),
    ("X-Tenant", "admin"),
    ("X-Domain-Name", "Default"),
    ("X-Default-Domain-Id", "default"),
    ("OpenStack-System-Scope", "all"),
    ("X-System-Scope", "all"),
    ("X-Identity-Status", "Confirmed"),
    ("X-Service-Roles", "admin"),
    ("X-Service-Identity-Status", "Confirmed"),
    ("X-Is-Admin-Project", "True"),
    ("X-Remote-User", "root"),
]


POLICY = {"name": "p", "weights": [{"unit": "RAMWeigher", "factor": -1}]}


def call(app, method: str, path: str, data=None, raw: bytes | None = None,
         headers: dict | None = None) -> webob.Response:
    sent = dict(headers or {})
    if raw is not None or data is not None:
        sent.setdefault("Content-Type", "application/json")
    request = webob.Request.blank(path, method=method, headers=sent)
    if raw is not None or data is not None:
        request.body = raw if raw is not None else json.dumps(data).encode()
    return request.get_response(app)


def message(response: webob.Response) -> str:
    error = response.json["error"]
    assert set(error) == {"code", "title", "message"}
    assert error["code"] == response.status_int
    return error["message"]
