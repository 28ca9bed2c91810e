"""What goes wrong around the RPC API, and what callers see then.

Configuration mistakes end ``scheduler-service`` with status 2 and one
line; an unreachable or vanishing broker is retried with clear log lines,
never a traceback loop, and bounds every client call; whatever a caller
puts on the wire comes back as a result, InvalidRequest or NoValidHost
(fuzzed with hypothesis against the real manager).
"""

import subprocess
import sys
import textwrap
import time

import pytest

from scheduler import rpc
from tests.functional.rpc_harness import FLEET
from tests.functional.rpc_harness import SERVING
from tests.functional.rpc_harness import SPEC
from tests.functional.rpc_harness import make_fleet
from tests.functional.rpc_harness import new_uuid
from tests.functional.rpc_harness import scheduler_api
from tests.functional.rpc_harness import wait_for_log
from tests.functional.tcp_proxy import TcpProxy
from tools.service_harness import BusNames

#: A port nothing listens on.
DEAD_BROKER = "rabbit://guest:guest@127.0.0.1:1/"


def oslo_messaging_module():
    # After scheduler.rpc selected the threading backend
    # (docs/architecture.md).
    import oslo_messaging
    return oslo_messaging


# Configuration errors


@pytest.mark.parametrize(("url", "shown"), [
    ("notaurl", "'notaurl'"),
    ("", "''"),
    ("foo://host/", "'foo://host/'"),
    ("rabbit://guest:s3cret@host:port/", "'rabbit://guest:***@host:port/'"),
])
def test_bad_transport_url_exits_2_with_one_line(
        write_config, sqlite_url, run_console_script, url, shown):
    config = write_config({"DEFAULT": {"transport_url": url},
                           "database": {"connection": sqlite_url}})
    result = run_console_script("scheduler-service", config_file=config)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("scheduler-service: error: invalid value "
                               f"{shown} for [DEFAULT] transport_url: ")
    assert "s3cret" not in result.stderr


@pytest.mark.parametrize(("sections", "option"), [
    ({"oslo_messaging_rabbit": {"rabbit_retry_interval": "abc"}},
     "[oslo_messaging_rabbit] rabbit_retry_interval"),
    ({"oslo_messaging_notifications": {"transport_url": "notaurl"}},
     "[oslo_messaging_notifications] transport_url"),
    ({"DEFAULT": {"transport_url": "kombu+memory:////"},
      "scheduler": {"workers": 2}}, "[scheduler] workers"),
    ({"database": {"connection": "nosuchdb://x"}},
     "[database] connection"),
])
def test_other_config_errors_exit_2_with_one_line(
        write_config, sqlite_url, run_console_script, sections, option):
    sections = {"database": {"connection": sqlite_url}, **sections}
    config = write_config(sections)
    result = run_console_script("scheduler-service", config_file=config)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert option in lines[0]


# The broker


def test_unreachable_broker_is_retried_without_traceback_loop(
        write_config, sqlite_url, start_console_script):
    config = write_config({"DEFAULT": {"transport_url": DEAD_BROKER},
                           "database": {"connection": sqlite_url}})
    process = start_console_script("scheduler-service", config_file=config)
    # oslo.messaging's attempts after 0, 1 and 3 s, then ours at 5 s.
    stderr = wait_for_log(lambda: process.stderr,
                          r"Message broker rabbit://guest:\*\*\*@127\.0\.0"
                          r"\.1:1/ is not reachable yet; retrying until it "
                          r"is", timeout=30, process=process.popen)
    stderr = wait_for_log(lambda: process.stderr, r"Connection failed: ",
                          timeout=30, count=3)
    assert "Traceback" not in stderr
    assert "guest:guest" not in stderr
    assert process.popen.poll() is None
    started = time.monotonic()
    process.popen.terminate()
    result = process.wait(timeout=15)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 10
    assert "Traceback" not in result.stderr


_BOUNDED_CLIENT = textwrap.dedent("""
    import sys, time
    from oslo_config import cfg
    from scheduler import conf as scheduler_conf
    from scheduler.conf import messaging as messaging_conf
    from scheduler.rpc import rpcapi
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    messaging_conf.register_messaging_opts(conf)
    conf([])
    conf.set_override("transport_url", sys.argv[1])
    api = rpcapi.SchedulerAPI(conf, timeout=3, retry=1)
    for _ in range(2):
        started = time.monotonic()
        try:
            api.explain({"flavor": {"vcpus": 1, "memory_mb": 1,
                                    "root_gb": 1}})
        except Exception as e:
            print(type(e).__name__, round(time.monotonic() - started, 1),
                  str(e).splitlines()[0])
""")


def test_client_call_is_bounded_while_the_broker_is_down():
    # A subprocess: the client keeps a thread trying to reach the broker,
    # which must not linger in the test process.
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", _BOUNDED_CLIENT, DEAD_BROKER],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout + result.stderr
    for line in lines:
        name, seconds, message = line.split(" ", 2)
        assert name == "MessagingTimeout"
        assert float(seconds) <= 4
        assert "rabbit://guest:***@127.0.0.1:1/ not reachable" in message
    assert time.monotonic() - started < 30


_NOTIFYING_WITHOUT_BROKER = textwrap.dedent("""
    import logging, sys
    from oslo_config import cfg
    from scheduler import conf as scheduler_conf
    from scheduler.conf import messaging as messaging_conf
    from scheduler.rpc import notifications
    import oslo_messaging
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    messaging_conf.register_messaging_opts(conf)
    conf([])
    conf.set_override("transport_url", sys.argv[1])
    conf.set_override("retry", 0, group="oslo_messaging_notifications")
    conf.set_override("driver", ["messagingv2"],
                      group="oslo_messaging_notifications")
    transport = oslo_messaging.get_notification_transport(conf)
    sender = notifications.BackgroundNotifier(
        notifications.create_notifier(conf, transport))
    for index in range(5):
        sender.info({"request_id": f"req-{index}"}, "test.event", {})
    sender.stop(timeout=60)
    print(sender.stats.sent, sender.stats.dropped, sender.stats.outages)
""")


def test_notifications_without_a_broker_are_dropped_quietly():
    """oslo.messaging itself logs each notification it cannot send with a
    traceback and the payload; the service logs one line per outage."""
    result = subprocess.run(
        [sys.executable, "-c", _NOTIFYING_WITHOUT_BROKER, DEAD_BROKER],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "5", "1"], result.stderr
    assert "Traceback" not in result.stderr
    assert "Payload" not in result.stderr
    assert result.stderr.count("Dropping notifications until they can be "
                               "sent again") == 1


def test_broker_outage_is_survived(broker_url, service_config,
                                   start_console_script):
    target = broker_url.split("@", 1)[1].split("/", 1)[0]
    host, _, port = target.partition(":")
    proxy = TcpProxy(host, int(port or 5672))
    proxy.restore()
    proxied = broker_url.replace(target, f"127.0.0.1:{proxy.port}")
    config = service_config({
        "DEFAULT": {"transport_url": proxied},
        # Reconnect quickly so that the test does not wait for long.
        "oslo_messaging_rabbit": {"rabbit_retry_interval": 1,
                                  "rabbit_retry_backoff": 1,
                                  "rabbit_interval_max": 2,
                                  "kombu_reconnect_delay": 0.5}})
    process = start_console_script("scheduler-service", config_file=config)
    try:
        wait_for_log(lambda: process.stderr, SERVING, process=process.popen)
        with scheduler_api(config, timeout=5, retry=1) as api:
            assert api.explain(SPEC)["selected"]
            proxy.cut()
            started = time.monotonic()
            with pytest.raises(oslo_messaging_module().MessagingException):
                # explain, not select_destinations: a call that does reach
                # the queue would be answered after the outage, claiming
                # for a caller who gave up.
                api.explain(SPEC)
            assert time.monotonic() - started < 15
            time.sleep(2)
            proxy.restore()
            deadline = time.monotonic() + 60
            while True:
                try:
                    assert api.explain(SPEC)["selected"]
                    break
                except oslo_messaging_module().MessagingException:
                    if time.monotonic() > deadline:
                        raise
        assert process.popen.poll() is None
        assert "Traceback" not in process.stderr
    finally:
        proxy.cut()


# The database


def test_database_errors_are_reported_and_survived(
        broker_url, write_config, sqlite_url,
        start_console_script):
    names = BusNames()
    sections = names.sections(broker_url)
    sections["database"] = {"connection": sqlite_url}
    config = write_config(sections)
    # No schema yet: every request fails on the database.
    process = start_console_script("scheduler-service", config_file=config)
    try:
        wait_for_log(lambda: process.stderr, SERVING, process=process.popen)
        with scheduler_api(config) as api:
            with pytest.raises(rpc.SchedulerInternalError) as raised:
                api.select_destinations(SPEC, [new_uuid()],
                                        context={"request_id": "req-db"})
            message = str(raised.value)
            assert type(raised.value) is rpc.SchedulerInternalError
            assert message.startswith(
                "select_destinations failed in the scheduler service on "
                f"host {names.host}: ")
            assert "database error" in message
            assert "(request req-db)" in message
            make_fleet(sqlite_url)
            instance = new_uuid()
            assert api.select_destinations(SPEC, [instance])[0][0][
                "host"] in FLEET
            assert api.release(instance)
        assert process.popen.poll() is None
    finally:
        # Stopped first: a consumer whose queue is deleted declares it
        # again.
        assert process.stop() == 0
        names.delete(broker_url)
