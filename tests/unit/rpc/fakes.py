"""Helpers shared by the rpc tests: a request spec, instance uuids and an
in-memory bus."""

import queue
import uuid

from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler.conf import messaging as messaging_conf
from scheduler.rpc import rpcapi
from scheduler.rpc import server

UUID1 = "6f1e4a5c-0000-4000-8000-000000000001"


SPEC = {"flavor": {"name": "m1.small", "vcpus": 1, "memory_mb": 512,
                   "root_gb": 1}}


SELECTION = [{"host": "node-1", "nodename": "node-1",
              "uuid": "4c3b2a10-0000-4000-8000-00000000000a", "weight": 1.5,
              "allocation_id": "a1"},
             {"host": "node-2", "nodename": "node-2",
              "uuid": "4c3b2a10-0000-4000-8000-00000000000b", "weight": 0.5,
              "allocation_id": None}]


def _messaging():
    # Imported after scheduler.rpc selected oslo.service's threading
    # backend (docs/architecture.md); a top-level import would sort before it.
    import oslo_messaging
    return oslo_messaging


class FakeManager:
    """Records calls; ``error`` (an exception) is raised by every call."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.error: BaseException | None = None
        self.released: set[str] = {UUID1}
        self.planner = FakePlanner()
        #: (name, why) of the weight_setting metrics no host reports.
        self.unreported: list[tuple[str, str]] = []

    def _record(self, *call: object) -> None:
        self.calls.append(call)
        if self.error is not None:
            raise self.error

    def select_destinations(self, request_spec, instance_uuids=None,
                            return_alternates=False, report=None):
        self._record("select_destinations", request_spec, instance_uuids,
                     return_alternates)
        count = len(instance_uuids or [None])
        return [SELECTION if return_alternates else SELECTION[:1]
                for _ in range(count)]

    def explain(self, request_spec):
        self._record("explain", request_spec)
        return {"selected": ["node-1"], "summary": "", "hosts": []}

    def release(self, instance_uuid):
        self._record("release", instance_uuid)
        return instance_uuid in self.released

    def balance(self, cluster, dry_run, migration_policy):
        self._record("balance", cluster, dry_run, migration_policy)
        return [PLANNED]

    def resume_releases(self):
        self._record("resume_releases")
        return 0

    def unreported_weight_metrics(self):
        return self.unreported


class FakePlanner:
    """What the service hooks its notifications to."""

    on_planned = None


def _make_conf() -> cfg.ConfigOpts:
    """A private ConfigOpts on kombu+memory with names of its own."""
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    messaging_conf.register_messaging_opts(conf)
    conf([])
    unique = uuid.uuid4().hex[:12]
    conf.set_override("transport_url", "kombu+memory:////")
    conf.set_override("control_exchange", f"test-{unique}")
    conf.set_override("scheduler_topic", f"scheduler-{unique}")
    conf.set_override("host", "sched-1")
    conf.set_override("topics", [f"notifications-{unique}"],
                      group="oslo_messaging_notifications")
    conf.set_override("driver", ["messagingv2"],
                      group="oslo_messaging_notifications")
    return conf


class _Collector:
    def __init__(self) -> None:
        self.events: queue.Queue = queue.Queue()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.events.put((ctxt, publisher_id, event_type, payload))


def _listen(conf: cfg.ConfigOpts):
    om = _messaging()
    transport = om.get_notification_transport(conf)
    collector = _Collector()
    listener = om.get_notification_listener(
        transport, [om.Target(topic=conf.oslo_messaging_notifications
                              .topics[0])], [collector])
    listener.start()
    return transport, listener, collector.events


class _Bus:
    """One server, client and notification listener for the module:
    stopping an oslo.messaging server or listener takes a second (its
    poll interval), which per test would dominate the run time."""

    def __init__(self) -> None:
        self.conf = _make_conf()
        self.manager = FakeManager()
        self.service = server.SchedulerRPCService(self.conf, self.manager)
        assert self.service.start()
        self.api = rpcapi.SchedulerAPI(self.conf, timeout=10)
        self.transport, self.listener, self.events = _listen(self.conf)

    def close(self) -> None:
        self.api.close()
        self.service.stop()
        self.listener.stop()
        self.listener.wait()
        self.transport.cleanup()


PLANNED = {"uuid": UUID1, "source_host": "node-1", "dest_host": "node-2",
           "state": "planned"}


def _next(events: queue.Queue) -> tuple:
    return events.get(timeout=10)
