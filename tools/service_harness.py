"""What the functional tests and ``tools/bench_service.py`` both need to
run a real ``scheduler-service``: bus names private to one run on a
shared RabbitMQ (and their removal), an oslo.config file's text, a free
port, the venv's console scripts and stopping a process by its PID.

Importable as ``tools.service_harness`` (the tests) and as
``service_harness`` (a tool run as ``python tools/<tool>.py``, where
``tools/`` is ``sys.path[0]``); it imports nothing of either.
"""

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import urllib.parse
import uuid
from collections.abc import Mapping

import kombu

NOTIFICATION_PRIORITIES = ("audit", "debug", "info", "warn", "error",
                           "critical", "sample")


@dataclasses.dataclass(frozen=True)
class BusNames:
    """Exchange, topics and server name private to one run (``label``:
    ``test`` or ``bench``): queue names are shared by every exchange of a
    virtual host, so parallel runs on one broker must not share them."""

    label: str = "test"
    unique: str = dataclasses.field(
        default_factory=lambda: uuid.uuid4().hex[:12])

    @property
    def exchange(self) -> str:
        return f"msched-{self.label}-{self.unique}"

    @property
    def topic(self) -> str:
        return f"scheduler-{self.label}-{self.unique}"

    @property
    def echo_topic(self) -> str:
        return f"echo-{self.label}-{self.unique}"

    @property
    def host(self) -> str:
        return f"sched-{self.unique}"

    @property
    def notification_topic(self) -> str:
        return f"notifications-{self.label}-{self.unique}"

    def sections(self, url: str) -> dict[str, dict[str, object]]:
        """The configuration sections that put a service on these names."""
        return {
            "DEFAULT": {"transport_url": url,
                        "control_exchange": self.exchange,
                        "scheduler_topic": self.topic,
                        "host": self.host},
            # Off by default; on, as deployments that consume them run.
            "oslo_messaging_notifications": {
                "driver": "messagingv2", "topics": self.notification_topic},
            # Reply and fanout queues have random names delete() cannot
            # know; the broker drops them this long after their last use.
            "oslo_messaging_rabbit": {"rabbit_transient_queues_ttl": 60},
        }

    def queues(self) -> list[str]:
        return [self.topic, f"{self.topic}.{self.host}", self.echo_topic,
                f"{self.echo_topic}.{self.host}"] + [
            f"{self.notification_topic}.{priority}"
            for priority in NOTIFICATION_PRIORITIES]

    def exchanges(self) -> list[str]:
        return [self.exchange, f"{self.topic}_fanout",
                f"{self.echo_topic}_fanout"]

    def delete(self, url: str) -> None:
        """Delete the run's queues (and the messages left in them) and
        exchanges: they outlive their consumers by default."""
        with contextlib.suppress(Exception), kombu_connection(url) as conn:
            channel = conn.channel()
            for name in self.queues():
                with contextlib.suppress(Exception):
                    channel.queue_delete(name)
            for name in self.exchanges():
                with contextlib.suppress(Exception):
                    channel.exchange_delete(name)


def kombu_connection(url: str) -> kombu.Connection:
    """A kombu connection to the broker of an oslo ``rabbit://`` URL."""
    parsed = urllib.parse.urlsplit(url)
    return kombu.Connection(
        hostname=parsed.hostname or "127.0.0.1", port=parsed.port or 5672,
        userid=urllib.parse.unquote(parsed.username or "guest"),
        password=urllib.parse.unquote(parsed.password or "guest"),
        virtual_host=urllib.parse.unquote(parsed.path[1:]) or "/",
        connect_timeout=5)


def option_text(value: object) -> str:
    """A value as an oslo.config file writes it: booleans lower case,
    lists comma-separated (pairs as ``key=value``), ``$`` doubled (oslo
    substitutes ``$name``)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, list | tuple):
        text = ",".join(f"{item[0]}={item[1]}" if isinstance(item, tuple)
                        else str(item) for item in value)
    else:
        text = str(value)
    if "\n" in text:
        raise ValueError(f"config values must be one line: {text!r}")
    return text.replace("$", "$$")


def config_text(sections: Mapping[str, Mapping[str, object]]) -> str:
    """The text of an oslo.config file holding ``sections``."""
    lines = []
    for section, options in sections.items():
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {option_text(value)}"
                     for key, value in options.items())
        lines.append("")
    return "\n".join(lines)


def free_port() -> int:
    """A loopback TCP port nothing listens on at the moment."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def console_script(name: str) -> str:
    """Path of a console script of the running venv: entry points cannot
    be run with ``python -m``; the script pip wrote next to the
    interpreter is what operators run."""
    path = os.path.join(os.path.dirname(sys.executable), name)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"console script {path} not found; install the "
                           "project (pip install -e .) into this venv")
    return path


def stop_process(popen: subprocess.Popen, timeout: float) -> int:
    """SIGTERM, then SIGKILL after ``timeout``, by PID; the status."""
    if popen.poll() is None:
        popen.terminate()
        try:
            popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()
    return popen.returncode
