"""A real ``scheduler-api`` process for the functional tests, with an
htpasswd file of the rule matrix's users and their permissions, and a
small HTTP client."""

import base64
import dataclasses
import http.client
import json
import time
from pathlib import Path

import bcrypt
import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from scheduler.db import permissions
from scheduler.db import schema
from tests.functional import private_servers

#: user -> (role, cluster); "nobody" exists in htpasswd with no role.
USERS = {"admin": ("admin", "*"), "ca_c1": ("cluster_admin", "c1"),
         "ca_all": ("cluster_admin", "*"), "reader": ("reader", "*"),
         "nobody": None}
PASSWORD = "secret"


@dataclasses.dataclass
class Reply:
    status: int
    headers: dict
    body: object

    @property
    def message(self) -> str:
        return self.body["error"]["message"] if isinstance(
            self.body, dict) and "error" in self.body else ""


@dataclasses.dataclass
class Api:
    port: int
    process: object

    def call(self, method: str, path: str, body: object = None,
             user: str | None = "admin", raw: bytes | None = None,
             headers: dict | None = None,
             content_type: str | None = "application/json") -> Reply:
        """``content_type`` goes with a body (None: no Content-Type)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port,
                                                timeout=30)
        sent = dict(headers or {})
        if user is not None:
            sent["Authorization"] = basic_authorization(user)
        data = raw if raw is not None else (
            None if body is None else json.dumps(body).encode())
        if data is not None and content_type is not None:
            sent["Content-Type"] = content_type
        try:
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            payload = response.read()
        finally:
            connection.close()
        try:
            parsed = json.loads(payload) if payload else None
        except ValueError:
            parsed = payload.decode(errors="replace")
        return Reply(response.status, dict(response.getheaders()), parsed)

    def get(self, path: str, **kwargs) -> Reply:
        return self.call("GET", path, **kwargs)


def basic_authorization(user: str = "admin") -> str:
    """The Authorization header of ``user`` of the htpasswd file."""
    token = base64.b64encode(f"{user}:{PASSWORD}".encode()).decode()
    return f"Basic {token}"


def write_htpasswd(path: Path) -> None:
    # Cost 4: the file's format is what counts here, not its strength.
    digest = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    lines = [f"{user}:{digest}" for user in USERS]
    path.write_text("\n".join(lines) + "\n")


def grant_matrix_permissions(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        with Session(engine) as session, session.begin():
            for user, grant in USERS.items():
                if grant is not None:
                    permissions.add(session, user, *grant)
    finally:
        engine.dispose()


def sync(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        schema.db_sync(engine)
    finally:
        engine.dispose()


def wait_ready(api: Api, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if api.process.popen.poll() is not None:
            pytest.fail(f"scheduler-api exited {api.process.popen.returncode}"
                        f":\n{api.process.stderr}\n{api.process.stdout}")
        try:
            if api.get("/healthcheck", user=None).status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail(f"scheduler-api not ready:\n{api.process.stderr}")


def start(tmp_path: Path, write_config, start_console_script, url: str,
          strategy: str = "http_basic", extra: dict | None = None) -> Api:
    htpasswd = tmp_path / "htpasswd"
    write_htpasswd(htpasswd)
    port = private_servers.free_port()
    sections = {"database": {"connection": url},
                "api": {"port": port, "auth_strategy": strategy},
                "oslo_middleware": {"http_basic_auth_user_file": htpasswd}}
    for section, options in (extra or {}).items():
        sections.setdefault(section, {}).update(options)
    config = write_config(sections, name="api.conf")
    process = start_console_script("scheduler-api", config_file=config)
    api = Api(port, process)
    wait_ready(api)
    return api
