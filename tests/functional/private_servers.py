"""Private RabbitMQ, PostgreSQL and MariaDB servers for the fault tests.

A test that stops or restarts a broker or a database must not do it to
the machine's shared one: whoever runs the tests (and every other test
run on the machine) uses it. Each class here starts a server of its own
from the installed binaries, on free loopback ports, with every file it
writes (data, logs, sockets, cookies, configuration) in a directory of
its own, and reads none of the machine's configuration files. ``close()``
stops it, kills what is left by PID and removes the directory; the
fixtures in ``conftest`` call it whatever the test did.

A server whose binaries are not installed skips the test (fails it in
CI, where a skipped fault test would hide a regression).
"""

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tools.service_harness import free_port

#: Seconds a server may take to start (RabbitMQ boots in 5-15 s here).
START_TIMEOUT = 120
_COMMAND_TIMEOUT = 120


def missing(what: str) -> None:
    from tests.functional import conftest
    message = f"a private {what} is needed and cannot be started here"
    if conftest.in_ci():
        pytest.fail(f"CI=true: {message}", pytrace=False)
    pytest.skip(message)


def _wait(what: str, ready: Callable[[], bool], log: Path,
          process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited with status "
                               f"{process.returncode}: {_tail(log)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {START_TIMEOUT} s: "
                               f"{_tail(log)}")
        time.sleep(0.2)


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-2000:]
    except OSError as e:
        return f"(no log: {e})"


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), \
            socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def _kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the process group of a server we started in a session of
    its own (its children included), by its leader's PID."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


def _kill_ours(pid: int, marker: str) -> None:
    """SIGKILL ``pid`` if its command line names ``marker`` (our data
    directory): a PID read from a stale file may belong to anyone now."""
    with contextlib.suppress(psutil.Error):
        if marker in " ".join(psutil.Process(pid).cmdline()):
            os.kill(pid, signal.SIGKILL)


def _give(server: "_Server", user: str) -> None:
    """Make ``user`` own the server's directory; removed if that fails,
    since the fixture has no server to close yet."""
    try:
        entry = pwd.getpwnam(user)
        os.chown(server.root, entry.pw_uid, entry.pw_gid)
    except BaseException:
        server.remove()
        raise


class _Server:
    """A scratch directory that outlives no test."""

    name = "server"

    def __init__(self) -> None:
        # Not under pytest's tmp_path: that is private to root (mode
        # 0700), and PostgreSQL and MariaDB run as their own users.
        self.root = Path(tempfile.mkdtemp(prefix=f"msched-{self.name}-"))
        self.root.chmod(0o755)

    def run(self, *command: str, timeout: float = _COMMAND_TIMEOUT,
            env: dict[str, str] | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(list(command), capture_output=True,
                                text=True, timeout=timeout, env=env,
                                stdin=subprocess.DEVNULL, cwd=self.root)
        if check and result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed with status "
                               f"{result.returncode}: {result.stdout}"
                               f"{result.stderr}")
        return result

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


# RabbitMQ


class PrivateRabbitMQ(_Server):
    """A RabbitMQ node of its own: node name, AMQP and distribution ports,
    epmd, Erlang cookie, Mnesia and log directories, no plugins."""

    name = "rabbitmq"

    def __init__(self) -> None:
        # The packaged rabbitmq-server is a wrapper that switches to the
        # rabbitmq user and reads /etc/rabbitmq; the scripts it wraps do
        # neither when told where their files are.
        server = shutil.which("rabbitmq-server")
        scripts = Path(os.path.realpath(server)).parent if server else None
        if scripts is None or not (scripts / "rabbitmqctl").exists() \
                or not shutil.which("epmd"):
            missing("RabbitMQ node (rabbitmq-server and epmd)")
        super().__init__()
        self.scripts = scripts
        self.port = free_port()
        self.node = f"msched-{os.getpid()}-{self.port}@localhost"
        self.url = f"rabbit://guest:guest@127.0.0.1:{self.port}/"
        self.epmd_port = free_port()
        self.log = self.root / "log" / f"{self.node}.log"
        for directory in ("home", "mnesia", "log"):
            (self.root / directory).mkdir()
        (self.root / "enabled_plugins").write_text("[].\n")
        (self.root / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\n")
        (self.root / "rabbitmq-env.conf").write_text("")
        self.env = {
            **os.environ,
            # The Erlang cookie is created in, and read from, $HOME.
            "HOME": str(self.root / "home"),
            "RABBITMQ_CONF_ENV_FILE": str(self.root / "rabbitmq-env.conf"),
            "RABBITMQ_CONFIG_FILE": str(self.root / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(self.root /
                                                 "advanced.config"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.root /
                                                 "enabled_plugins"),
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(free_port()),
            "RABBITMQ_MNESIA_BASE": str(self.root / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.root / "log"),
            "RABBITMQ_PID_FILE": str(self.root / "rabbitmq.pid"),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS":
                "-kernel inet_dist_use_interface {127,0,0,1}",
            # An epmd of our own, so that nothing is registered with (or
            # left running next to) the machine's.
            "ERL_EPMD_PORT": str(self.epmd_port),
        }
        self.epmd: subprocess.Popen | None = None
        self.server: subprocess.Popen | None = None

    def start(self) -> "PrivateRabbitMQ":
        self.epmd = subprocess.Popen(
            ["epmd", "-port", str(self.epmd_port), "-address", "127.0.0.1"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        _wait("epmd", lambda: _accepts(self.epmd_port),
              self.root / "none", self.epmd)
        with open(self.root / "server.out", "wb") as out:
            self.server = subprocess.Popen(
                [str(self.scripts / "rabbitmq-server")], env=self.env,
                cwd=self.root, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)
        self.wait_until_serving()
        return self

    def ctl(self, *args: str, check: bool = True
            ) -> subprocess.CompletedProcess:
        return self.run(str(self.scripts / "rabbitmqctl"), "-n", self.node,
                        *args, env=self.env, check=check)

    def wait_until_serving(self) -> None:
        def serving() -> bool:
            return self.run(
                str(self.scripts / "rabbitmq-diagnostics"), "-n", self.node,
                "-q", "check_port_connectivity", env=self.env,
                check=False).returncode == 0

        _wait(f"RabbitMQ node {self.node}", serving,
              self.root / "server.out", self.server)

    def stop_app(self) -> None:
        self.ctl("stop_app")

    def start_app(self) -> None:
        self.ctl("start_app")
        self.wait_until_serving()

    def close(self) -> None:
        try:
            if self.server is not None and self.server.poll() is None:
                with contextlib.suppress(Exception):
                    self.ctl("stop", check=False)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.server.wait(timeout=30)
        finally:
            for process in (self.server, self.epmd):
                if process is not None:
                    _kill_group(process)
            self.remove()


# PostgreSQL


def _postgresql_bin() -> Path | None:
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                      key=lambda p: int(Path(p).parts[-3]))
    if versions:
        return Path(versions[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


class PrivatePostgreSQL(_Server):
    """A PostgreSQL cluster of its own (initdb, pg_ctl), trust
    authentication, on a free port with its socket in its directory."""

    name = "postgresql"

    def __init__(self) -> None:
        bindir = _postgresql_bin()
        if bindir is None or not (bindir / "initdb").exists():
            missing("PostgreSQL cluster (initdb and pg_ctl)")
        super().__init__()
        self.bindir = bindir
        self.port = free_port()
        self.data = self.root / "data"
        self.log = self.root / "postgresql.log"
        self.url = (f"postgresql+psycopg://postgres@127.0.0.1:{self.port}"
                    f"/postgres")
        # PostgreSQL refuses to run as root: as root, run it as the
        # postgres user, which then owns the directory.
        self.user = "postgres" if os.geteuid() == 0 else None
        if self.user is not None:
            _give(self, self.user)

    def _as_user(self, *command: str) -> list[str]:
        if self.user is None:
            return list(command)
        return ["runuser", "-u", self.user, "--", *command]

    def pg(self, tool: str, *args: str,
           check: bool = True) -> subprocess.CompletedProcess:
        return self.run(*self._as_user(str(self.bindir / tool), *args),
                        check=check)

    def start(self) -> "PrivatePostgreSQL":
        if not self.data.exists():
            self.pg("initdb", "--no-sync", "-A", "trust", "-U", "postgres",
                    "-E", "UTF8", "-D", str(self.data))
        options = (f"-p {self.port} -k {self.root} "
                   f"-c listen_addresses=127.0.0.1 -c fsync=off")
        self.pg("pg_ctl", "-D", str(self.data), "-l", str(self.log),
                "-o", options, "-w", "-t", str(START_TIMEOUT), "start")
        return self

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast`` ends sessions; ``immediate`` is a
        crash) and wait until it is gone."""
        self.pg("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def postmaster_pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int((self.data / "postmaster.pid").read_text()
                       .split()[0])
        return None

    def close(self) -> None:
        try:
            if self.postmaster_pid() is not None:
                with contextlib.suppress(Exception):
                    self.stop("immediate")
            pid = self.postmaster_pid()
            if pid is not None:
                _kill_ours(pid, str(self.data))
        finally:
            self.remove()


# MariaDB


class PrivateMariaDB(_Server):
    """A MariaDB server of its own (mariadb-install-db, mariadbd): its
    own datadir, socket and port, no option files read, root without a
    password."""

    name = "mariadb"

    def __init__(self) -> None:
        self.install = shutil.which("mariadb-install-db")
        self.daemon = shutil.which("mariadbd") or (
            "/usr/sbin/mariadbd" if os.path.exists("/usr/sbin/mariadbd")
            else None)
        if self.install is None or self.daemon is None:
            missing("MariaDB server (mariadb-install-db and mariadbd)")
        super().__init__()
        self.port = free_port()
        self.data = self.root / "data"
        self.socket = self.root / "mariadb.sock"
        self.log = self.root / "mariadb.err"
        self.url = f"mysql+pymysql://root@127.0.0.1:{self.port}/"
        # mariadbd refuses root unless told; as root it switches to mysql.
        self.user = "mysql" if os.geteuid() == 0 else None
        if self.user is not None:
            _give(self, self.user)
        self.server: subprocess.Popen | None = None

    def _user_args(self) -> list[str]:
        return [f"--user={self.user}"] if self.user else []

    def start(self) -> "PrivateMariaDB":
        if not self.data.exists():
            self.run(self.install, "--no-defaults",
                     f"--datadir={self.data}",
                     "--auth-root-authentication-method=normal",
                     "--skip-test-db", *self._user_args())
        self.server = subprocess.Popen(
            [self.daemon, "--no-defaults", f"--datadir={self.data}",
             f"--socket={self.socket}", f"--port={self.port}",
             "--bind-address=127.0.0.1", f"--log-error={self.log}",
             f"--pid-file={self.root / 'mariadb.pid'}",
             "--skip-name-resolve", "--innodb-flush-log-at-trx-commit=0",
             *self._user_args()],
            cwd=self.root, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        _wait("MariaDB", lambda: _accepts(self.port), self.log, self.server)
        return self

    def stop(self) -> None:
        """A clean shutdown (SIGTERM), waiting until the server is gone."""
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            self.server.wait(timeout=_COMMAND_TIMEOUT)

    def close(self) -> None:
        try:
            if self.server is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.stop()
                _kill_group(self.server)
        finally:
            self.remove()
