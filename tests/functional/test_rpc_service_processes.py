"""scheduler-service processes: notifications sent by a process of their
own that ends with its worker, and the service module run as a script."""

import os
import queue
import signal
import subprocess
import sys
import time

import psutil

from scheduler import rpc
from tests.functional.rpc_harness import SERVING
from tests.functional.rpc_harness import SPEC
from tests.functional.rpc_harness import client_conf
from tests.functional.rpc_harness import new_uuid
from tests.functional.rpc_harness import scheduler_api
from tests.functional.rpc_harness import wait_for_log


class _Notifications:
    """A notification listener's endpoint: every INFO notification."""

    def __init__(self) -> None:
        self.received: queue.Queue = queue.Queue()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.received.put((ctxt, publisher_id, event_type, payload))

    def next_pair(self, timeout: float) -> list[tuple]:
        return [self.received.get(timeout=timeout) for _ in range(2)]


def _senders(pid: int) -> list[psutil.Process]:
    # multiprocessing's spawned children (not its resource tracker).
    return [child for child in psutil.Process(pid).children()
            if "spawn_main" in " ".join(child.cmdline())]


def _running(process: psutil.Process) -> bool:
    """Alive, or still ending: not yet a zombie with every thread gone.

    A killed process's main thread turns zombie while its other threads
    may still hold its files open (Linux closes them with the last
    thread): a notification written meanwhile goes into a pipe that
    still has a reader, and is lost with the process.
    """
    try:
        if process.status() != psutil.STATUS_ZOMBIE:
            return True
        return len(os.listdir(f"/proc/{process.pid}/task")) > 1
    except (psutil.NoSuchProcess, FileNotFoundError):
        return False


def test_notifications_are_sent_by_a_process_of_their_own(
        service_config, start_console_script):
    # One worker, so that its sender is a child of the started process.
    config = service_config({"scheduler": {"workers": 1}})
    conf = client_conf(config)
    process = start_console_script("scheduler-service", config_file=config)
    # After scheduler.rpc chose oslo.service's threading backend
    # (docs/architecture.md): a top-level import would sort before it.
    import oslo_messaging as om
    transport = om.get_notification_transport(conf)
    endpoint = _Notifications()
    listener = om.get_notification_listener(
        transport,
        [om.Target(topic=conf.oslo_messaging_notifications.topics[0])],
        [endpoint], executor="threading")
    listener.start()
    try:
        wait_for_log(lambda: process.stderr, SERVING, process=process.popen)
        sender, = _senders(process.popen.pid)
        with scheduler_api(config) as api:
            instance = new_uuid()
            entry, = api.select_destinations(
                SPEC, [instance], context={"request_id": "req-n1"})[0]
            start, end = endpoint.next_pair(timeout=30)
            assert [start[2], end[2]] == [rpc.SELECT_START, rpc.SELECT_END]
            assert {start[1], end[1]} == {f"scheduler.{conf.host}"}
            assert start[0]["request_id"] == end[0]["request_id"] == "req-n1"
            assert start[3]["instance_uuids"] == [instance]
            assert end[3]["selections"] == [[entry]]
            # A sender that dies is replaced; what is queued meanwhile is
            # sent by the next one.
            sender.kill()
            deadline = time.monotonic() + 10
            while _running(sender) and time.monotonic() < deadline:
                time.sleep(0.05)
            api.select_destinations(SPEC, [new_uuid()],
                                    context={"request_id": "req-n2"})
            pair = endpoint.next_pair(timeout=60)
            assert [n[0]["request_id"] for n in pair] == ["req-n2"] * 2
        replacement, = _senders(process.popen.pid)
        assert "The notification sender process" in process.stderr
        process.popen.send_signal(signal.SIGTERM)
        result = process.wait(timeout=30)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert not _running(replacement)
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()


def test_the_sender_process_ends_with_its_worker(service_config,
                                                start_console_script):
    # One worker, so that its sender is a child of the started process.
    config = service_config({"scheduler": {"workers": 1}})
    process = start_console_script("scheduler-service", config_file=config)
    wait_for_log(lambda: process.stderr, SERVING, process=process.popen)
    sender, = _senders(process.popen.pid)
    process.popen.kill()
    process.popen.wait(10)
    deadline = time.monotonic() + 10
    while _running(sender) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(sender)


def test_service_module_runs_as_a_script(service_config):
    # ``python -m scheduler.cmd.service`` behaves like the console script.
    config = service_config({"DEFAULT": {"transport_url": "notaurl"}})
    result = subprocess.run(
        [sys.executable, "-m", "scheduler.cmd.service", "--config-file",
         str(config)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "transport_url" in result.stderr
