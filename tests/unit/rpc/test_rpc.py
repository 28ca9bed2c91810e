"""The RPC endpoint and client over an in-process ``kombu+memory`` bus.

A fake manager stands in for ``SchedulerManager``: these tests are about
what crosses the bus (arguments, results, exceptions, notifications), not
about scheduling. Each test gets its own exchange and topics, as kombu's
memory broker is shared by the whole process.
"""

import logging
import threading

import pytest

from scheduler import exception
from scheduler import rpc
from scheduler.db import locks
from scheduler.request import extra_specs
from scheduler.rpc import endpoint
from scheduler.rpc import notifications as rpc_notifications
from scheduler.rpc import rpcapi
from scheduler.rpc import server
from tests.fakes import exceptions_at_warnings
from tests.unit.rpc.fakes import SELECTION
from tests.unit.rpc.fakes import SPEC
from tests.unit.rpc.fakes import UUID1
from tests.unit.rpc.fakes import FakeManager
from tests.unit.rpc.fakes import _listen
from tests.unit.rpc.fakes import _messaging
from tests.unit.rpc.fakes import _next

UUID2 = "6f1e4a5c-0000-4000-8000-000000000002"


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


def test_a_request_failing_for_an_unreported_metric_warns(api, manager,
                                                         caplog, monkeypatch):
    manager.error = exception.NoValidHost(
        "0/1 hosts available: 1 MetricsWeigher (required metric "
        "unavailable: cpu.percnt)")
    manager.unreported = [("cpu.percnt", "no host reports cpu.percnt; did "
                           "you mean 'cpu.percent'?")]
    with caplog.at_level(logging.WARNING, logger="scheduler.rpc.endpoint"), \
            exceptions_at_warnings("scheduler.rpc.endpoint") as exceptions, \
            pytest.raises(exception.NoValidHost):
        api.select_destinations(SPEC, context={"request_id": "req-7"})
    # Out of the except block: oslo.log would append the NoValidHost.
    assert exceptions == [None]
    assert [r.getMessage() for r in caplog.records] == [
        "select_destinations (request req-7) failed for [metrics] "
        "weight_setting: no host reports cpu.percnt; did you mean "
        "'cpu.percent'?"]
    # Checked again only after a while: each check reads every host.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="scheduler.rpc.endpoint"), \
            pytest.raises(exception.NoValidHost):
        api.select_destinations(SPEC, context={"request_id": "req-8"})
    assert caplog.records == []
    monkeypatch.setattr(endpoint, "UNREPORTED_CHECK_INTERVAL", 0.0)
    with caplog.at_level(logging.WARNING, logger="scheduler.rpc.endpoint"), \
            pytest.raises(exception.NoValidHost):
        api.select_destinations(SPEC, context={"request_id": "req-9"})
    assert ["req-9" in r.getMessage() for r in caplog.records] == [True]
    # Any other NoValidHost is the request's business, not the config's.
    caplog.clear()
    manager.error = exception.NoValidHost("0/1 hosts available: 1 RamFilter "
                                          "(insufficient RAM)")
    with caplog.at_level(logging.WARNING, logger="scheduler.rpc.endpoint"), \
            pytest.raises(exception.NoValidHost):
        api.select_destinations(SPEC)
    assert caplog.records == []


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
