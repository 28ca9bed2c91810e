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
import uuid
import warnings

import pytest
from hypothesis import HealthCheck
from hypothesis import event
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler import manager as manager_mod
from scheduler import rpc
from scheduler.conf import messaging as messaging_conf
from scheduler.db import api as db_api
from scheduler.rpc import rpcapi
from scheduler.rpc import server
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


def _messaging():
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
            with pytest.raises(_messaging().MessagingException):
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
                except _messaging().MessagingException:
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


# Fuzzing the wire format against the real manager


class _InProcessBus:
    """The real SchedulerManager on SQLite behind the real endpoint, over
    kombu+memory in this process (fast enough for hundreds of examples)."""

    def __init__(self, db_url: str) -> None:
        make_fleet(db_url)
        conf = cfg.ConfigOpts()
        scheduler_conf.register_opts(conf)
        messaging_conf.register_messaging_opts(conf)
        conf([])
        unique = uuid.uuid4().hex[:12]
        conf.set_override("connection", db_url, group="database")
        conf.set_override("transport_url", "kombu+memory:////")
        conf.set_override("control_exchange", f"fuzz-{unique}")
        conf.set_override("scheduler_topic", f"scheduler-{unique}")
        conf.set_override("driver", ["noop"],
                          group="oslo_messaging_notifications")
        self.manager = manager_mod.SchedulerManager(conf)
        self.service = server.SchedulerRPCService(conf, self.manager)
        assert self.service.start()
        self.api = rpcapi.SchedulerAPI(conf, timeout=60)

    def close(self) -> None:
        self.api.close()
        self.service.stop()
        db_api.dispose_engines()


@pytest.fixture(scope="module")
def fuzz_bus(tmp_path_factory):
    bus = _InProcessBus(
        f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'fuzz.sqlite'}")
    yield bus
    bus.close()


_scalars = (st.none() | st.booleans() | st.integers(-2**64, 2**64)
            | st.floats() | st.text(max_size=12))
_json = st.recursive(
    _scalars, lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=8)


def _maybe(valid: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly well-formed values, one in ten anything JSON can carry: a
    spec has a dozen fields, and most specs should get past validation."""
    # The garbage branch on the largest value: hypothesis favours small
    # ones, and shrinks towards well-formed values.
    return st.integers(0, 9).flatmap(lambda n: _json if n == 9 else valid)


def _rarely_with(base: st.SearchStrategy, key: str) -> st.SearchStrategy:
    """``base`` dicts, one in twenty with an unknown ``key`` added."""
    return st.tuples(base, st.integers(0, 19), _json).map(
        lambda t: {**t[0], key: t[2]} if t[1] == 19 else t[0])


_extra_specs = st.dictionaries(
    # Keys: JSON object keys are strings whatever the caller had.
    st.sampled_from(["resources:cpu.percent", "resources:memory.free",
                     "resources:network.rx.bps", "resources:",
                     "hw:cpu_policy", "capabilities:arch"])
    | st.text(max_size=20),
    _maybe(st.sampled_from(["max", "min", "<85M", ">= 1.5G", "==2", "!=0",
                            "<abc", "maxx", "<=1Ki", "x86_64", ">1e400"])
           | st.text(max_size=12)),
    max_size=3)
_flavor = _rarely_with(st.fixed_dictionaries(
    {"vcpus": _maybe(st.integers(-1, 16)),
     "memory_mb": _maybe(st.integers(-1, 70000)),
     "root_gb": _maybe(st.integers(-1, 200))},
    optional={"name": _maybe(st.text(max_size=10)),
              "ephemeral_gb": _maybe(st.integers(0, 10)),
              "extra_specs": _maybe(_extra_specs)}), "swap")
_hosts = st.lists(_maybe(st.sampled_from(FLEET + ("off", "nowhere"))),
                  max_size=3)
_hints = st.fixed_dictionaries({}, optional={
    "same_host": _maybe(_hosts), "different_host": _maybe(_hosts),
    "group": _maybe(st.text(max_size=8)),
    "group_policy": _maybe(st.sampled_from(
        ["affinity", "anti-affinity", "soft-affinity",
         "soft-anti-affinity", "bogus"])),
    "query": _maybe(st.sampled_from([
        '[">=", "$free_ram_mb", 1024]', '["and"]', "[", '["nosuchop", 1]',
        '["=", "$metrics.cpu.percent", 1]'])),
})
_spec = _rarely_with(st.fixed_dictionaries({
    "flavor": _maybe(_flavor)}, optional={
    "num_instances": _maybe(st.integers(-1, 3)),
    "availability_zone": _maybe(st.sampled_from(["nova", "az2"])),
    "cluster": _maybe(st.sampled_from(["c1", "c2"])),
    "scheduler_hints": _maybe(_hints),
    "ignore_hosts": _maybe(_hosts),
    "force_hosts": _maybe(_hosts),
    "force_nodes": _maybe(_hosts),
    "requested_networks": _maybe(st.lists(st.sampled_from(
        ["public", "private"]), max_size=2)),
    "image": _maybe(st.fixed_dictionaries({}, optional={
        "properties": st.dictionaries(st.text(max_size=8), _scalars,
                                      max_size=3)})),
}), "flavour")
_uuids = st.none() | _maybe(st.lists(st.uuids().map(str), max_size=3))


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(method=st.sampled_from(["select_destinations", "explain"]),
       spec=_maybe(_spec), instance_uuids=_uuids,
       return_alternates=_maybe(st.booleans()))
def test_fuzzed_requests_get_a_result_or_a_contract_error(
        fuzz_bus, method, spec, instance_uuids, return_alternates):
    api = fuzz_bus.api
    with warnings.catch_warnings():
        # jsonutils warns about values it has to stringify (none here).
        warnings.simplefilter("ignore")
        try:
            if method == "explain":
                decision = api.explain(spec)
                assert set(decision) >= {"selected", "summary", "hosts"}
                event("explain: decided")
                return
            result = api.select_destinations(spec, instance_uuids,
                                             return_alternates)
        except (exception.InvalidRequest, exception.NoValidHost) as e:
            # Statistics (--hypothesis-show-statistics) show the mix.
            event(f"{method}: {type(e).__name__} {str(e).split(':')[0]}")
            assert type(e) in (exception.InvalidRequest,
                               exception.NoValidHost)
            assert str(e) and len(str(e)) < 2000
            return
    event("select_destinations: placed")
    # Placed: one list per instance, each led by a claim; give it back so
    # that the fleet does not fill up over the examples.
    assert result and all(entries[0]["allocation_id"] for entries in result)
    if isinstance(instance_uuids, list) and instance_uuids:
        released = instance_uuids
    else:
        released = [entries[0]["allocation_id"] for entries in result]
    for instance in released:
        assert api.release(instance) is True
