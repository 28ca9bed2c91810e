"""ProcessNotifier: notifications handed to a sender process (spawned).

The sender process is real (spawned); its transport is oslo.messaging's
fake one and its driver ``log``, so what it sends lands in its log file.
"""

import time

import pytest

from scheduler import rpc
from scheduler.rpc import notification_process


@pytest.fixture
def sender_log(tmp_path):
    log = tmp_path / "sender.log"
    config = tmp_path / "sender.conf"
    config.write_text(
        "[DEFAULT]\n"
        "transport_url = fake://\n"
        "host = test-host\n"
        f"log_file = {log}\n"
        f"state_path = {tmp_path}\n"
        "[oslo_messaging_notifications]\n"
        "driver = log\n")
    return config, log


def sent(log, marker: str, timeout: float = 30.0) -> str:
    """The sender's log once ``marker`` is in it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text() if log.exists() else ""
        if marker in text:
            return text
        time.sleep(0.05)
    pytest.fail(f"{marker!r} never sent; the sender logged:\n{text}")


def test_sender_process_sends_in_order_and_drops_what_cannot_cross(
        sender_log):
    config, log = sender_log
    notifier = notification_process.ProcessNotifier(
        ["--config-file", str(config)], "scheduler-service")
    try:
        notifier.info({"request_id": "req-1"}, rpc.SELECT_START,
                      {"order": "first"})
        # A lambda cannot be pickled: that notification only is lost.
        notifier.info({}, rpc.SELECT_END, {"order": lambda: None})
        notifier.info({}, rpc.SELECT_END, {"order": "second"})
        text = sent(log, '"second"')
    finally:
        notifier.stop()
    notifier.stop()  # again: nothing left to do
    assert text.index('"first"') < text.index('"second"')
    assert '"publisher_id": "scheduler.test-host"' in text
    assert notifier.stats.dropped == 1
    assert not notifier._feeder.is_alive()
    notifier.info({}, rpc.SELECT_START, {"order": "late"})
    assert notifier.stats.dropped == 1  # ignored once stopped


def test_a_sender_process_that_dies_is_replaced(sender_log):
    config, log = sender_log
    notifier = notification_process.ProcessNotifier(
        ["--config-file", str(config)], "scheduler-service")
    try:
        notifier.info({}, rpc.SELECT_START, {"order": "before"})
        sent(log, '"before"')
        first = notifier._process
        first.kill()
        first.join(10)
        notifier.info({}, rpc.SELECT_START, {"order": "after"})
        sent(log, '"after"')
        assert notifier._process.pid != first.pid
    finally:
        notifier.stop()
    assert not notifier._process or not notifier._process.is_alive()
