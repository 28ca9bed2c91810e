"""A real Keystone for the ``keystone`` auth strategy's tests: installed
from PyPI into a virtualenv of the tests' own (cached under
``~/.cache/metrics-scheduler/keystone-venv``, or
``SCHEDULER_TEST_KEYSTONE_VENV``), on SQLite, served on a free loopback
port by the standard library's WSGI server (a test server only)."""

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.functional import conftest
from tests.functional import private_servers

VENV = Path(os.environ.get(
    "SCHEDULER_TEST_KEYSTONE_VENV",
    Path.home() / ".cache" / "metrics-scheduler" / "keystone-venv"))
ADMIN_PASSWORD = "keystone-admin"
SERVE = """
import sys
# Keystone parses the command line; the port comes first, then nothing.
port = int(sys.argv.pop(1))
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIServer, make_server
class Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
from keystone.wsgi.api import application
make_server("127.0.0.1", port, application,
            server_class=Server).serve_forever()
"""


def _unavailable(reason: str) -> None:
    if conftest.in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


#: Written once Keystone is installed in the venv: without it every
#: run asked pip to install it again (the index asked each time).
INSTALLED = VENV / "keystone-installed"


def venv_python() -> Path:
    """The venv's python, Keystone installed; created on first use."""
    python = VENV / "bin" / "python"
    if python.exists() and INSTALLED.exists():
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    result = subprocess.run([python, "-m", "pip", "install", "-q",
                             "keystone"], capture_output=True, text=True,
                            timeout=1800)
    # (keystone.wsgi.api cannot be imported without a configuration.)
    if result.returncode != 0 or subprocess.run(
            [python, "-c", "import keystone.server"],
            capture_output=True).returncode != 0:
        _unavailable("Keystone could not be installed from PyPI: "
                     + (result.stderr.strip().splitlines() or ["?"])[-1])
    INSTALLED.touch()
    return python


class Keystone:
    def __init__(self, workdir: Path):
        self.python = venv_python()
        self.port = private_servers.free_port()
        self.url = f"http://127.0.0.1:{self.port}/v3"
        self.config = workdir / "keystone.conf"
        keys = {name: workdir / name for name in
                ("fernet-keys", "fernet-receipts", "credential-keys")}
        self.config.write_text(
            f"[database]\nconnection = sqlite:///{workdir}/keystone.db\n"
            f"[fernet_tokens]\nkey_repository = {keys['fernet-keys']}\n"
            f"[fernet_receipts]\nkey_repository = "
            f"{keys['fernet-receipts']}\n"
            f"[credential]\nkey_repository = {keys['credential-keys']}\n"
            # bcrypt's fewest rounds: a test server's passwords need no
            # strength, and at the default 12 every token issued took a
            # quarter of a second of CPU.
            "[identity]\npassword_hash_rounds = 4\n")
        # The key repositories and the database at once (each command
        # is seconds of imports), then what needs them all.
        self._manage(["db_sync"],
                     ["fernet_setup", "--keystone-user", "root",
                      "--keystone-group", "root"],
                     ["credential_setup", "--keystone-user", "root",
                      "--keystone-group", "root"])
        self._manage(["bootstrap", "--bootstrap-password", ADMIN_PASSWORD,
                      "--bootstrap-admin-url", self.url,
                      "--bootstrap-public-url", self.url,
                      "--bootstrap-internal-url", self.url,
                      "--bootstrap-region-id", "RegionOne"])
        env = dict(os.environ, OS_KEYSTONE_CONFIG_FILES=str(self.config))
        self.log_path = workdir / "keystone.log"
        # The child keeps its own descriptor of the log.
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [self.python, "-c", SERVE, str(self.port)], env=env,
                stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL)
        self._wait()

    def _manage(self, *commands: list[str]) -> None:
        """Run the keystone-manage ``commands`` side by side."""
        manage = self.python.parent / "keystone-manage"
        running = [(args, subprocess.Popen(
            [manage, "--config-file", self.config, *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
            for args in commands]
        try:
            for args, process in running:
                _, stderr = process.communicate(timeout=300)
                assert process.returncode == 0, (args, stderr[-2000:])
        finally:
            for _, process in running:
                if process.poll() is None:
                    process.kill()
                    process.wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail("keystone exited:\n"
                            + self.log_path.read_text(errors="replace"),
                            pytrace=False)
            try:
                urllib.request.urlopen(self.url, timeout=2).read()
                return
            except OSError:
                time.sleep(0.3)
        pytest.fail("keystone did not start", pytrace=False)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)

    def request(self, method: str, path: str, body: dict | None = None,
                token: str | None = None) -> tuple[dict, dict]:
        request = urllib.request.Request(
            self.url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json",
                     **({"X-Auth-Token": token} if token else {})})
        with urllib.request.urlopen(request, timeout=30) as response:
            payload = response.read()
            return (dict(response.headers),
                    json.loads(payload) if payload else {})

    def token(self, user: str, password: str, scope: dict) -> str:
        headers, _ = self.request("POST", "/auth/tokens", {"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": user, "domain": {"id": "default"},
                "password": password}}},
            "scope": scope}})
        return headers["X-Subject-Token"]

    def admin_token(self) -> str:
        """System-scoped: Keystone's admin of the whole deployment."""
        return self.token("admin", ADMIN_PASSWORD, {"system": {"all": True}})

    def domain(self, name: str) -> str:
        """A new Keystone domain; its id."""
        _, domain = self.request("POST", "/domains", {"domain": {
            "name": name}}, self.admin_token())
        return domain["domain"]["id"]

    def project_member(self, name: str, password: str, role: str = "member",
                       domain_id: str = "default") -> str:
        """A new user of ``domain_id`` with ``role`` on a new project of
        that domain; its project-scoped token."""
        admin = self.admin_token()
        project_name = f"{name}-{domain_id}-project"
        _, project = self.request("POST", "/projects", {"project": {
            "name": project_name, "domain_id": domain_id}}, admin)
        _, user = self.request("POST", "/users", {"user": {
            "name": name, "password": password, "domain_id": domain_id}},
            admin)
        _, roles = self.request("GET", f"/roles?name={role}", token=admin)
        role_id = roles["roles"][0]["id"]
        self.request("PUT", f"/projects/{project['project']['id']}/users/"
                     f"{user['user']['id']}/roles/{role_id}", token=admin)
        headers, _ = self.request("POST", "/auth/tokens", {"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "id": user["user"]["id"], "password": password}}},
            "scope": {"project": {"id": project["project"]["id"]}}}})
        return headers["X-Subject-Token"]

    def revoke(self, token: str) -> None:
        request = urllib.request.Request(
            self.url + "/auth/tokens", method="DELETE",
            headers={"X-Auth-Token": self.admin_token(),
                     "X-Subject-Token": token})
        urllib.request.urlopen(request, timeout=30).read()


def authtoken_section(keystone: Keystone) -> dict:
    """[keystone_authtoken] of scheduler-api, Keystone's admin as the
    service user."""
    return {"www_authenticate_uri": keystone.url,
            "auth_url": keystone.url, "auth_type": "password",
            "username": "admin", "password": ADMIN_PASSWORD,
            "user_domain_name": "Default", "project_name": "admin",
            "project_domain_name": "Default"}


