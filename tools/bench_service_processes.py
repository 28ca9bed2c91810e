"""``tools/bench_service.py``'s processes: the service's configuration,
the bare echo server it is compared with (a child process: ``--serve-echo
CONFIG``), a started server (its log, readiness, CPU time, stop by PID)
and a console script run under yappi."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from types import ModuleType
from typing import Any

import psutil
from oslo_config import cfg

try:
    # tools/ is sys.path[0] when a tool runs as a script.
    import bench_engine
    import bench_postgres
    import service_harness
except ImportError:  # python -m tools.bench_service
    from tools import bench_engine
    from tools import bench_postgres
    from tools import service_harness

from scheduler import conf as scheduler_conf
from scheduler import rpc
from scheduler.conf import messaging as messaging_conf
from scheduler.rpc import notification_process

#: Seconds a server may take to import, connect and serve.
START_TIMEOUT = 60.0
#: Heartbeat and metrics age limits of the service: longer than any run.
STALE_AFTER = 86400
#: The keys of one select_destinations reply entry.
SELECTION_KEYS = ("host", "nodename", "uuid", "weight", "allocation_id")
#: The label of the benchmark's bus names.
BUS_LABEL = "bench"


def messaging() -> ModuleType:
    """oslo_messaging, imported only after ``scheduler.rpc`` selected the
    threading backend (docs/architecture.md): a top-level import would be
    sorted before it and pick eventlet."""
    import oslo_messaging

    return oslo_messaging



# Configuration


def engine_overrides() -> dict[str, dict[str, object]]:
    """What ``bench_engine.make_conf`` sets beyond the defaults (filters,
    weighers, metrics weighing), so that the service decides like the
    engine benchmark."""
    tuned = bench_engine.make_conf("sqlite://")
    pristine = cfg.ConfigOpts()
    scheduler_conf.register_opts(pristine)
    pristine([], default_config_files=[], default_config_dirs=[])
    overrides: dict[str, dict[str, object]] = {}
    for group in ("filter_scheduler", "metrics", "scheduler"):
        for name in tuned[group]:
            value = tuned[group][name]
            if value != pristine[group][name]:
                overrides.setdefault(group, {})[name] = value
    return overrides



def write_config(path: Path, names: service_harness.BusNames,
                 transport_url: str, db_url: str, state_path: Path,
                 workers: int = 1, metrics_port: int = 0) -> None:
    sections = names.sections(transport_url)
    sections["DEFAULT"]["state_path"] = state_path
    sections.update({
        "database": {"connection": db_url},
        # The exporter tells the claims and conflicts (conflict_rate).
        "scheduler": {"workers": workers, "metrics_port": metrics_port,
                      "metrics_host": "127.0.0.1"},
        # The fleet is written once and no monitor reports during the
        # run: heartbeats and metrics must not expire (same checks, a
        # day's margin).
        "filter_scheduler": {"service_down_time": STALE_AFTER},
        "metrics": {"max_age": STALE_AFTER}})
    for group, options in engine_overrides().items():
        sections.setdefault(group, {}).update(options)
    path.write_text(service_harness.config_text(sections))


def load_config(path: str | os.PathLike) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    messaging_conf.register_messaging_opts(conf)
    conf(["--config-file", os.fspath(path)], default_config_files=[],
         default_config_dirs=[])
    return conf


# The echo server (a child process: --serve-echo CONFIG)


class EchoEndpoint:
    """The bare RPC endpoint the service is compared with; with a
    notifier, it also sends the start and end notifications the service
    sends for each select_destinations (same event types, sender and
    payload sizes) and nothing else: the bus work of a decision that
    costs nothing."""

    def __init__(self, notifier: Any = None) -> None:
        self.target = messaging().Target(version=rpc.RPC_API_VERSION)
        self.notifier = notifier

    def echo(self, ctxt: dict, payload: Any) -> Any:
        if self.notifier is not None:
            self.notifier.info(ctxt, rpc.SELECT_START, {
                "request_spec": payload, "instance_uuids": None,
                "return_alternates": False})
            self.notifier.info(ctxt, rpc.SELECT_END, {
                "instance_uuids": None, "error": None,
                "selections": [[dict.fromkeys(SELECTION_KEYS, "x" * 36)]]})
        return payload


def serve_echo(config_file: str, notify: bool = False) -> int:
    """Serve ``echo`` on the run's echo topic until SIGTERM or SIGINT;
    ``notify``: with the service's notifications."""
    oslo_messaging = messaging()
    conf = load_config(config_file)
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    transport = oslo_messaging.get_rpc_transport(conf)
    names = service_harness.BusNames(BUS_LABEL,
                                     conf.host.removeprefix("sched-"))
    target = oslo_messaging.Target(topic=names.echo_topic, server=conf.host)
    # As SchedulerRPCService does: default (threading) executor.
    notifier = None
    if notify:
        # As the service sends them: from a process of its own.
        notifier = notification_process.ProcessNotifier(
            ["--config-file", config_file], "scheduler-service")
    server = oslo_messaging.get_rpc_server(
        transport, target, [EchoEndpoint(notifier)],
        access_policy=oslo_messaging.DefaultRPCAccessPolicy)
    server.start()
    print(f"Serving topic {names.echo_topic}", flush=True)
    while not stop.wait(1.0):
        pass
    server.stop()
    server.wait()
    if notifier is not None:
        notifier.stop()
    transport.cleanup()
    return 0


# Server processes


class ServerProcess:
    """A server started by this run, its output in a log file."""

    def __init__(self, name: str, command: list[str], log_path: Path,
                 ready: str):
        self.name = name
        self.log_path = log_path
        self.ready = ready
        environment = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(log_path, "wb") as log:
            self.popen = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=environment)
        self.process = psutil.Process(self.popen.pid)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while self.ready not in self.log_path.read_text(errors="replace"):
            if self.popen.poll() is not None:
                raise RuntimeError(
                    f"{self.name} (pid {self.pid}) exited with "
                    f"{self.popen.returncode} before serving:\n"
                    f"{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} (pid {self.pid}) not "
                                   f"serving after {timeout:g} s:\n"
                                   f"{self.log_tail()}")
            time.sleep(0.1)

    def cpu_seconds(self) -> float:
        """User + system CPU time of the process and of its worker
        processes (all their threads)."""
        return bench_postgres.process_cpu(
            [self.process, *self.process.children(recursive=True)])

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``; by PID only."""
        service_harness.stop_process(self.popen, timeout)


#: Runs a console script under yappi (wall clock, every thread) and saves
#: the profile in pstats format when the script returns (SIGTERM).
_PROFILED = """
import runpy, sys, yappi
out, sys.argv = sys.argv[1], sys.argv[2:]
yappi.set_clock_type("wall")
yappi.start(builtins=False)
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    yappi.stop()
    yappi.get_func_stats().save(out, type="pstat")
"""


def profiled(command: list[str], out: Path) -> list[str]:
    """``command`` (a Python console script) run under yappi, its profile
    written to ``out`` when it exits."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return [sys.executable, "-c", _PROFILED, os.fspath(out), *command]


