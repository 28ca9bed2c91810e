"""The RPC service and client: concurrency and lifecycle, the client's
arguments and configuration, and balance (API 1.1)."""

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
from scheduler.rpc import notifications as rpc_notifications
from scheduler.rpc import rpcapi
from scheduler.rpc import server
from tests.unit.rpc.fakes import PLANNED
from tests.unit.rpc.fakes import SPEC
from tests.unit.rpc.fakes import UUID1
from tests.unit.rpc.fakes import FakeManager
from tests.unit.rpc.fakes import _messaging
from tests.unit.rpc.fakes import _next

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
