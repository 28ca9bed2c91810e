"""The RPC endpoint and client over an in-process ``kombu+memory`` bus.

A fake manager stands in for ``SchedulerManager``: these tests are about
what crosses the bus (arguments, results, exceptions, notifications), not
about scheduling. Each test gets its own exchange and topics, as kombu's
memory broker is shared by the whole process.
"""

import logging
import queue
import threading
import uuid

import kombu.exceptions
import pytest
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler import rpc
from scheduler.cmd import service as service_cmd
from scheduler.conf import messaging as messaging_conf
from scheduler.db import locks
from scheduler.request import extra_specs
from scheduler.rpc import notifications as rpc_notifications
from scheduler.rpc import rpcapi
from scheduler.rpc import server
from tests.unit.rpc.fakes import PLANNED
from tests.unit.rpc.fakes import SELECTION
from tests.unit.rpc.fakes import SPEC
from tests.unit.rpc.fakes import UUID1
from tests.unit.rpc.fakes import FakeManager
from tests.unit.rpc.fakes import _Bus
from tests.unit.rpc.fakes import _listen
from tests.unit.rpc.fakes import _make_conf
from tests.unit.rpc.fakes import _messaging


@pytest.fixture
def conf() -> cfg.ConfigOpts:
    """A ConfigOpts of its own, for tests that start their own server."""
    return _make_conf()

UUID2 = "6f1e4a5c-0000-4000-8000-000000000002"


@pytest.fixture(scope="module")
def bus():
    bus = _Bus()
    yield bus
    bus.close()


@pytest.fixture
def manager(bus) -> FakeManager:
    """The shared server's manager, reset for the test."""
    bus.manager.__init__()
    return bus.manager


@pytest.fixture
def api(bus, manager) -> rpcapi.SchedulerAPI:
    return bus.api


@pytest.fixture
def service(bus) -> server.SchedulerRPCService:
    return bus.service


@pytest.fixture
def notifications(bus, manager) -> queue.Queue:
    """(ctxt, publisher_id, event_type, payload) received from now on."""
    # Wait for the notifications of earlier tests' calls, then drop them.
    while True:
        try:
            bus.events.get(timeout=0.2)
        except queue.Empty:
            return bus.events


def _next(events: queue.Queue) -> tuple:
    return events.get(timeout=10)


# Round trips


def test_select_destinations_round_trip(api, manager):
    result = api.select_destinations(SPEC, [UUID1, UUID2],
                                     return_alternates=True)
    assert result == [SELECTION, SELECTION]
    assert manager.calls == [("select_destinations", SPEC, [UUID1, UUID2],
                              True)]


def test_select_destinations_defaults(api, manager):
    assert api.select_destinations(SPEC) == [SELECTION[:1]]
    assert manager.calls == [("select_destinations", SPEC, None, False)]


def test_explain_round_trip(api, manager):
    assert api.explain(SPEC) == {"selected": ["node-1"], "summary": "",
                                 "hosts": []}
    assert manager.calls == [("explain", SPEC)]


def test_release_round_trip(api, manager):
    assert api.release(UUID1) is True
    assert api.release(UUID2) is False
    assert manager.calls == [("release", UUID1), ("release", UUID2)]


# Exceptions


@pytest.mark.parametrize("error", [
    exception.NoValidHost("0/3 hosts available: 3 RamFilter (insufficient "
                          "RAM)"),
    exception.InvalidRequest("request_spec.flavor.vcpus: 'two' is not of "
                             "type 'integer'"),
])
def test_contract_errors_arrive_as_the_same_class(api, manager, error):
    manager.error = error
    with pytest.raises(type(error)) as raised:
        api.select_destinations(SPEC, [UUID1])
    # The class itself, not oslo.messaging's "_Remote" subclass, and the
    # message without the server's traceback.
    assert type(raised.value) is type(error)
    assert str(raised.value) == str(error)


def test_invalid_extra_spec_arrives_as_invalid_request(api, manager):
    error = extra_specs.InvalidExtraSpec("resources:cpu.percent", "abc",
                                         "max, min or <op><number>")
    manager.error = error
    with pytest.raises(exception.InvalidRequest) as raised:
        api.explain(SPEC)
    assert type(raised.value) is exception.InvalidRequest
    assert str(raised.value) == str(error)
    assert "resources:cpu.percent" in str(raised.value)


def test_subclass_of_no_valid_host_arrives_as_no_valid_host(api, manager):
    class LockHeldTooLong(exception.NoValidHost):
        pass

    manager.error = LockHeldTooLong("cluster lock held too long")
    with pytest.raises(exception.NoValidHost) as raised:
        api.select_destinations(SPEC)
    assert type(raised.value) is exception.NoValidHost
    assert str(raised.value) == "cluster lock held too long"


def test_unexpected_error_is_logged_and_reported_clearly(
        api, manager, caplog):
    manager.error = KeyError("flavor")
    with caplog.at_level(logging.ERROR, logger="scheduler.rpc.endpoint"), \
            pytest.raises(rpc.SchedulerInternalError) as raised:
        api.select_destinations(SPEC, context={"request_id": "req-42"})
    message = str(raised.value)
    assert type(raised.value) is rpc.SchedulerInternalError
    assert "select_destinations failed in the scheduler service on host " \
        "sched-1: KeyError: 'flavor' (request req-42;" in message
    assert "Traceback" not in message
    records = [r for r in caplog.records if "req-42" in r.getMessage()]
    assert len(records) == 1
    assert records[0].exc_info is not None  # the traceback is logged
    # The server survived and serves the next request.
    manager.error = None
    assert api.select_destinations(SPEC) == [SELECTION[:1]]


def test_known_service_error_is_reported_without_traceback(
        api, manager, caplog):
    manager.error = locks.LockTimeout("cluster:c1", 30)
    with caplog.at_level(logging.ERROR, logger="scheduler.rpc.endpoint"), \
            pytest.raises(rpc.SchedulerInternalError) as raised:
        api.select_destinations(SPEC)
    assert "lock 'cluster:c1' still held by another process after 30 s" \
        in str(raised.value)
    assert [r.exc_info for r in caplog.records] == [None]


@pytest.mark.parametrize("spec", [[SPEC], "flavor", None, 42])
def test_request_spec_must_be_an_object(api, manager, spec):
    with pytest.raises(exception.InvalidRequest,
                       match=r"^request_spec: .* is not of type 'object'"):
        api.select_destinations(spec)
    with pytest.raises(exception.InvalidRequest, match=r"^request_spec: "):
        api.explain(spec)
    assert manager.calls == []


def test_return_alternates_must_be_a_boolean(api, manager):
    with pytest.raises(exception.InvalidRequest,
                       match=r"^return_alternates: 'false' is not of type "
                       r"'boolean'"):
        api.select_destinations(SPEC, return_alternates="false")
    assert manager.calls == []


def test_huge_wrong_value_gives_a_short_message(api):
    with pytest.raises(exception.InvalidRequest) as raised:
        api.select_destinations(["x" * 100000] * 100)
    assert len(str(raised.value)) < 200


def test_unknown_method_is_a_remote_error(api):
    om = _messaging()
    with pytest.raises(om.RemoteError, match="NoSuchMethod"):
        api._client.call({}, "_guard")


def test_transport_without_our_exmods_still_gets_our_classes(
        bus, manager):
    # An API node may hand in a transport it built for its own services.
    om = _messaging()
    transport = om.get_rpc_transport(bus.conf)
    try:
        api = rpcapi.SchedulerAPI(bus.conf, transport=transport, timeout=10)
        manager.error = exception.NoValidHost("0/1 hosts available")
        with pytest.raises(exception.NoValidHost) as raised:
            api.select_destinations(SPEC)
        assert type(raised.value) is exception.NoValidHost
        assert str(raised.value) == "0/1 hosts available"
        manager.error = ValueError("boom")
        with pytest.raises(rpc.SchedulerInternalError, match="ValueError"):
            api.explain(SPEC)
    finally:
        transport.cleanup()


def test_translate_remote_error_leaves_other_errors_alone():
    om = _messaging()
    timeout = om.MessagingTimeout("no reply")
    assert rpcapi.translate_remote_error(timeout) is timeout
    remote = om.RemoteError("ValueError", "x", [])
    assert rpcapi.translate_remote_error(remote) is remote
    translated = rpcapi.translate_remote_error(
        om.RemoteError("InvalidExtraSpec", "bad spec", []))
    assert type(translated) is exception.InvalidRequest
    assert str(translated) == "bad spec"


# Notifications


def test_select_destinations_notifications(api, notifications):
    api.select_destinations(SPEC, [UUID1], return_alternates=True,
                            context={"request_id": "req-7"})
    ctxt, publisher, event, payload = _next(notifications)
    assert (publisher, event) == ("scheduler.sched-1",
                                  "scheduler.select_destinations.start")
    assert ctxt["request_id"] == "req-7"
    assert payload == {"request_spec": SPEC, "instance_uuids": [UUID1],
                       "return_alternates": True}
    ctxt, publisher, event, payload = _next(notifications)
    assert (publisher, event) == ("scheduler.sched-1",
                                  "scheduler.select_destinations.end")
    assert payload == {"instance_uuids": [UUID1], "selections": [SELECTION],
                       "error": None}


def test_end_notification_carries_the_error(api, manager, notifications):
    manager.error = exception.NoValidHost("0/2 hosts available")
    with pytest.raises(exception.NoValidHost):
        api.select_destinations(SPEC)
    events = [_next(notifications), _next(notifications)]
    assert [e[2] for e in events] == ["scheduler.select_destinations.start",
                                      "scheduler.select_destinations.end"]
    assert events[1][3]["error"] == {"class": "NoValidHost",
                                     "message": "0/2 hosts available"}
    assert events[1][3]["selections"] is None


def test_no_notification_for_a_malformed_call(api, notifications):
    with pytest.raises(exception.InvalidRequest):
        api.select_destinations([])
    api.explain(SPEC)
    api.select_destinations(SPEC)
    # The first notification is the valid call's.
    assert _next(notifications)[3]["request_spec"] == SPEC


class _SlowNotifier:
    """An oslo Notifier stand-in: each send waits for ``release``; the
    next ``failures`` sends fail the way oslo.messaging's drivers do, by
    logging the error with its traceback."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None]] = []
        self.sending = threading.Event()
        self.release = threading.Event()
        self.failures = 0

    def info(self, ctxt, event_type, payload):
        self.sending.set()
        assert self.release.wait(10), "the caller was kept waiting"
        if self.failures:
            self.failures -= 1
            try:
                raise ConnectionRefusedError("broker unreachable")
            except ConnectionRefusedError:
                logging.getLogger("oslo_messaging.notify.messaging"
                                  ).exception("Could not send notification")
            return
        self.sent.append((event_type, ctxt.request_id))


def test_notifications_leave_in_order_after_the_caller_returned():
    slow = _SlowNotifier()
    sender = rpc_notifications.BackgroundNotifier(slow)
    for index in range(3):
        # Returns although the first send waits for the release below.
        sender.info({"request_id": f"req-{index}"}, f"event.{index}", {})
    slow.release.set()
    sender.stop()
    assert slow.sent == [("event.0", "req-0"), ("event.1", "req-1"),
                         ("event.2", "req-2")]
    assert (sender.stats.sent, sender.stats.dropped) == (3, 0)


def test_a_full_queue_drops_and_counts():
    slow = _SlowNotifier()
    sender = rpc_notifications.BackgroundNotifier(slow, queue_size=2)
    sender.info({}, "event.0", {})
    assert slow.sending.wait(10)  # event.0 left the queue
    for index in range(1, 5):
        sender.info({}, f"event.{index}", {})
    slow.release.set()
    sender.stop()
    assert [event for event, _ in slow.sent] == ["event.0", "event.1",
                                                 "event.2"]
    assert (sender.stats.sent, sender.stats.dropped,
            sender.stats.outages) == (3, 2, 1)


def test_a_broker_outage_is_two_lines_not_a_traceback_per_notification(
        caplog):
    slow = _SlowNotifier()
    slow.release.set()
    slow.failures = 5
    sender = rpc_notifications.BackgroundNotifier(slow)
    caplog.set_level(logging.INFO)
    for index in range(5):
        sender.info({}, f"lost.{index}", {})
    sender.info({}, "after", {})
    sender.stop()
    records = [(r.name, r.levelname, r.getMessage()) for r in caplog.records
               if r.name.startswith(("oslo_messaging", "scheduler.rpc"))]
    assert records == [
        ("scheduler.rpc.notifications", "WARNING", "Dropping notifications "
         "until they can be sent again: ConnectionRefusedError: broker "
         "unreachable"),
        ("scheduler.rpc.notifications", "INFO", "Notifications are sent "
         "again (5 dropped since this service started)")]
    assert [event for event, _ in slow.sent] == ["after"]
    assert (sender.stats.sent, sender.stats.dropped,
            sender.stats.outages) == (1, 5, 1)


def test_records_of_other_threads_are_left_alone(caplog):
    sender = rpc_notifications.BackgroundNotifier(_SlowNotifier())
    sender.info({}, "started", {})
    logging.getLogger("oslo_messaging.notify.messaging").error("elsewhere")
    sender.notifier.release.set()
    sender.stop()
    assert [r.getMessage() for r in caplog.records
            if r.name == "oslo_messaging.notify.messaging"] == ["elsewhere"]


def test_notifications_can_be_disabled(conf):
    conf.set_override("driver", ["noop"],
                      group="oslo_messaging_notifications")
    transport, listener, events = _listen(conf)
    service = server.SchedulerRPCService(conf, FakeManager())
    service.start()
    try:
        with rpcapi.SchedulerAPI(conf, timeout=10) as api:
            api.select_destinations(SPEC)
    finally:
        service.stop()
        listener.stop()
        listener.wait()
        transport.cleanup()
    assert events.empty()


# Concurrency and lifecycle


def test_concurrent_calls_from_threads(api, manager):
    results: list = []
    errors: list = []

    def call(index: int) -> None:
        try:
            uuids = [str(uuid.UUID(int=index))]
            results.append(api.select_destinations(SPEC, uuids))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert len(results) == 16
    assert len(manager.calls) == 16


def test_an_in_process_transport_keeps_notifications_in_a_thread(conf):
    # A child process could not reach the fake broker of this one.
    service = server.SchedulerRPCService(
        conf, FakeManager(), command_line=["--config-file", "unused.conf"])
    try:
        assert isinstance(service.notifier,
                          rpc_notifications.BackgroundNotifier)
    finally:
        service.stop()


def test_stop_before_start_leaves_nothing_running(conf):
    service = server.SchedulerRPCService(conf, FakeManager())
    service.stop()
    assert service.start() is False
    assert not service.started


def test_worker_serves_until_stopped(conf):
    manager = FakeManager()
    worker = server.SchedulerWorker(conf, manager)
    worker.start()
    try:
        with rpcapi.SchedulerAPI(conf, timeout=10) as api:
            assert api.release(UUID1) is True
    finally:
        worker.stop()
    worker.wait()  # returns at once once stopped
    # The claims a stopped process left awaiting release, before serving.
    assert manager.calls[:2] == [("resume_releases",), ("release", UUID1)]


def test_worker_needs_a_manager(conf):
    with pytest.raises(ValueError):
        server.SchedulerWorker(conf)


# Client arguments and configuration


def test_client_refuses_unbounded_retry(conf):
    with pytest.raises(ValueError, match="finite"):
        rpcapi.SchedulerAPI(conf, retry=None)
    with pytest.raises(ValueError, match="finite"):
        rpcapi.SchedulerAPI(conf, retry=-1)


def test_broker_refusing_a_new_connection_is_a_delivery_failure(
        conf, monkeypatch):
    """oslo.messaging lets kombu's own error out when its pool opens a new
    connection and the broker refuses it after the retries: callers get
    the documented bounded error instead."""
    om = _messaging()
    api = rpcapi.SchedulerAPI(conf, retry=1, timeout=5)
    refused = kombu.exceptions.OperationalError(
        "[Errno 111] Connection refused")

    class Refusing:
        def call(self, ctxt, method, **kwargs):
            raise refused

    monkeypatch.setattr(api, "_wait_reply_queue", lambda deadline: None)
    monkeypatch.setattr(api._client, "prepare",
                        lambda **options: Refusing())
    with pytest.raises(om.MessageDeliveryFailure) as raised:
        api.select_destinations(SPEC)
    assert "unreachable after 1 retries" in str(raised.value)
    assert "Connection refused" in str(raised.value)
    assert raised.value.__cause__ is refused
    api.close()


def test_client_timeout_defaults_to_rpc_response_timeout(conf):
    conf.set_override("rpc_response_timeout", 17)
    api = rpcapi.SchedulerAPI(conf)
    assert api.timeout == 17
    assert api.retry == rpcapi.DEFAULT_RETRY
    assert api.target.topic == conf.scheduler_topic
    api.close()


def test_messaging_options_on_a_private_conf():
    conf = cfg.ConfigOpts()
    messaging_conf.register_messaging_opts(conf)
    messaging_conf.register_messaging_opts(conf)  # idempotent
    scheduler_conf.register_opts(conf)
    conf([])
    assert conf.transport_url == messaging_conf.DEFAULT_TRANSPORT_URL
    assert conf.control_exchange == "scheduler"
    assert conf.scheduler_topic == "scheduler"
    # Off unless the operator turns them on: nobody may consume them.
    assert conf.oslo_messaging_notifications.driver == []
    assert service_cmd.notifications_summary(conf) == "off"
    conf.set_override("driver", ["messagingv2"],
                      group="oslo_messaging_notifications")
    assert service_cmd.notifications_summary(conf) == (
        "messagingv2 on topic(s) notifications")
    assert conf.oslo_messaging_notifications.retry == 3
    # The groups oslo.messaging only registers on the global cfg.CONF.
    assert conf.oslo_messaging_tracing.tracing_enabled is False
    assert conf.oslo_messaging_metrics.metrics_enabled is False


def test_messaging_options_on_the_global_conf():
    # oslo.messaging registered some of these on cfg.CONF already.
    messaging_conf.register_messaging_opts(cfg.CONF)
    assert "transport_url" in cfg.CONF


@pytest.mark.parametrize(("url", "problem"), [
    ("notaurl", "No scheme specified"),
    ("", "it is empty"),
    (None, "it is empty"),
    ("foo://host/", "no oslo.messaging driver 'foo'"),
    ("rabbit://u:secret@host:port/", "invalid literal for int()"),
])
def test_check_transport_url(conf, url, problem):
    with pytest.raises(exception.ConfigError) as raised:
        rpc.check_transport_url(conf, "DEFAULT", url)
    message = str(raised.value)
    assert "[DEFAULT] transport_url" in message
    assert problem in message
    assert "secret" not in message


@pytest.mark.parametrize("url", ["rabbit://guest:guest@127.0.0.1:5672/",
                                 "kombu+memory:////", "rabbit://",
                                 "rabbit://a:b@h1:5672,a:b@h2:5672/vhost"])
def test_check_transport_url_accepts(conf, url):
    rpc.check_transport_url(conf, "DEFAULT", url)


def test_optional_transport_url_may_be_empty(conf):
    rpc.check_transport_url(conf, "oslo_messaging_notifications", None,
                            required=False)


@pytest.mark.parametrize(("url", "shown"), [
    ("rabbit://guest:guest@127.0.0.1:5672/",
     "rabbit://guest:***@127.0.0.1:5672/"),
    ("rabbit://a:p@ss@h1:1,b:q@h2:2/v", "rabbit://a:***@h1:1,b:***@h2:2/v"),
    ("kombu+memory:////", "kombu+memory:////"),
    ("notaurl", "notaurl"),
])
def test_safe_transport_url(url, shown):
    assert rpc.safe_transport_url(url) == shown


def test_configured_workers_falls_back_to_one(conf):
    bare = cfg.ConfigOpts()
    bare([])
    assert service_cmd.configured_workers(bare) == 1


@pytest.mark.parametrize(("url", "expected"), [
    ("rabbit://guest:guest@127.0.0.1/", 6),
    # Several processes cannot share an in-process bus: one worker.
    ("kombu+memory:////", 1),
    ("fake://", 1),
])
def test_unset_workers_are_one_per_cpu(conf, monkeypatch, url, expected):
    monkeypatch.setattr(service_cmd, "cpu_count", lambda: 6)
    conf.set_override("transport_url", url)
    assert conf.scheduler.workers is None
    assert service_cmd.configured_workers(conf) == expected
    service_cmd.validate_transport(conf)


def test_explicit_workers_are_kept(conf, monkeypatch):
    monkeypatch.setattr(service_cmd, "cpu_count", lambda: 6)
    conf.set_override("transport_url", "rabbit://guest:guest@127.0.0.1/")
    for workers in (1, 3, 12):
        conf.set_override("workers", workers, group="scheduler")
        assert service_cmd.configured_workers(conf) == workers


def test_cpu_count_is_the_cpus_this_process_may_use(monkeypatch):
    monkeypatch.setattr(service_cmd.os, "sched_getaffinity",
                        lambda pid: {0, 2, 5}, raising=False)
    assert service_cmd.cpu_count() == 3
    monkeypatch.delattr(service_cmd.os, "sched_getaffinity")
    monkeypatch.setattr(service_cmd.os, "cpu_count", lambda: None)
    assert service_cmd.cpu_count() == 1


def test_several_workers_need_a_shared_broker(conf):
    conf.set_override("workers", 2, group="scheduler")
    with pytest.raises(exception.ConfigError,
                       match=r"\[scheduler\] workers: .*kombu\+memory"):
        service_cmd.validate_transport(conf)
    conf.set_override("transport_url", "rabbit://guest:guest@127.0.0.1/")
    service_cmd.validate_transport(conf)


# balance (API 1.1)


def test_balance_round_trip(api, manager):
    assert api.balance("c1", dry_run=True) == [PLANNED]
    assert manager.calls == [("balance", "c1", True, None)]
    api.balance(migration_policy="post_copy")
    assert manager.calls[-1] == ("balance", None, False, "post_copy")


@pytest.mark.parametrize("kwargs, message", [
    ({"cluster": 5}, "cluster: 5 is not of type 'string'"),
    ({"dry_run": "yes"}, "dry_run: 'yes' is not of type 'boolean'"),
    ({"migration_policy": 3}, "migration_policy: 3 is not of type 'string'"),
])
def test_balance_arguments_are_checked(api, manager, kwargs, message):
    with pytest.raises(exception.InvalidRequest, match=message):
        api.balance(**kwargs)
    assert manager.calls == []


def test_planned_migrations_are_notified(bus, manager, notifications):
    bus.conf.set_override("interval", 0, group="balancer")
    # No periodic task with interval 0; the notification hook is set.
    assert bus.service.periodic_balancer() is None
    manager.planner.on_planned(PLANNED)
    bus.conf.clear_override("interval", group="balancer")
    _ctxt, publisher, event_type, payload = _next(notifications)
    assert (publisher, event_type, payload) == (
        "scheduler.sched-1", rpc.MIGRATION_PLANNED, PLANNED)


def test_periodic_balancing_starts_with_an_interval(bus, manager):
    bus.conf.set_override("interval", 3600, group="balancer")
    planner = manager.planner
    planner.balance = lambda **kwargs: []
    balancing = bus.service.periodic_balancer()
    try:
        assert balancing is not None
        assert balancing.interval == 3600
    finally:
        balancing.stop(timeout=5)
        bus.conf.clear_override("interval", group="balancer")

