"""The RPC endpoint ``scheduler-service`` serves (DESIGN §5).

``SchedulerEndpoint`` checks what arrives from the wire, delegates to a
``SchedulerManager`` and turns every outcome into one of three things the
caller can rely on: a JSON-safe result, ``InvalidRequest`` /
``NoValidHost`` (rebuilt as the same classes by ``SchedulerAPI``), or
``SchedulerInternalError`` for anything unexpected, whose traceback stays in
this service's log. No exception escapes into oslo.messaging as anything
else, so a bug in one request never takes the server down and never leaks
an arbitrary class to API nodes.

``SchedulerRPCService`` owns the transports, the notifier (sending from a
background thread: ``scheduler.rpc.notifications``) and the RPC server of
one process; ``SchedulerWorker`` is that process as an oslo.service
service, and ``run_workers`` forks several of them.
"""

import functools
import reprlib
import threading
import time
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import Protocol

import oslo_messaging
from oslo_config import cfg
from oslo_log import log as logging
from oslo_service import service as oslo_service

from scheduler import exception
from scheduler import observability
from scheduler import request_values
from scheduler import rpc
from scheduler.balancer.task import PeriodicBalancer
from scheduler.conf import messaging as messaging_conf
from scheduler.db import api as db_api
from scheduler.host_manager import HostManager
from scheduler.rpc import arguments
from scheduler.rpc import notification_process
from scheduler.rpc import notifications

LOG = logging.getLogger(__name__)

#: After this long without a broker connection, a worker says so once in
#: its own words next to oslo.messaging's per-attempt "Connection failed".
BROKER_WAIT_NOTICE = 5.0

_short_repr = reprlib.Repr()
_short_repr.maxstring = _short_repr.maxother = 40
_short_repr.maxlist = _short_repr.maxtuple = _short_repr.maxdict = 3
_short_repr.maxlevel = 2


class Notifier(Protocol):
    """What the service needs of ``notifications.BackgroundNotifier`` and
    ``notification_process.ProcessNotifier``."""

    def info(self, ctxt: dict, event_type: str, payload: dict) -> None: ...

    def stop(self, timeout: float = 5.0) -> None: ...


class Manager(Protocol):
    """What the endpoint needs of ``scheduler.manager.SchedulerManager``."""

    def select_destinations(self, request_spec: dict,
                            instance_uuids: list[str] | None = None,
                            return_alternates: bool = False
                            ) -> list[list[dict]]: ...

    def explain(self, request_spec: dict) -> dict: ...

    def release(self, instance_uuid: str) -> bool: ...

    def balance(self, cluster: str | None, dry_run: bool,
                migration_policy: str | None) -> list[dict]: ...

    def resume_releases(self) -> int: ...


def _wrong_type(name: str, value: object, expected: str
                ) -> exception.InvalidRequest:
    # Worded like the manager's schema errors, bounded whatever the size
    # of the value.
    shown = _short_repr.repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return exception.InvalidRequest(
        f"{name}: {shown} is not of type {expected!r}")


def check_request_spec(request_spec: object) -> dict:
    """Only that it is an object: the manager validates its contents
    against the published schema (and ``instance_uuids`` with it)."""
    if not isinstance(request_spec, dict):
        raise _wrong_type("request_spec", request_spec, "object")
    return request_spec


def check_bool(value: object, name: str) -> bool:
    # bool(value) would turn "false" into True.
    if not isinstance(value, bool):
        raise _wrong_type(name, value, "boolean")
    return value


def request_id(ctxt: object) -> str:
    """The caller's request id, for log lines and error messages."""
    if isinstance(ctxt, dict) and ctxt.get("request_id"):
        return str(ctxt["request_id"])
    return "-"


def _selection_summary(selections: list[list[dict]]) -> list[list[str]]:
    return [[str(entry.get("host")) for entry in per_instance]
            for per_instance in selections]


class SchedulerEndpoint:
    """RPC API 1.0 of topic ``scheduler``.

    Public methods are what clients can call; oslo.messaging's default
    access policy hides the underscored helpers.
    """

    target = oslo_messaging.Target(version=rpc.RPC_API_VERSION)

    def __init__(self, manager: Manager, host: str,
                 notifier: Notifier | None = None):
        self.manager = manager
        self.host = host
        self.notifier = notifier

    @oslo_messaging.expected_exceptions(exception.InvalidRequest,
                                        exception.NoValidHost,
                                        rpc.SchedulerInternalError)
    @arguments.checked
    def select_destinations(self, ctxt: dict, request_spec: dict,
                            instance_uuids: list[str] | None = None,
                            return_alternates: bool = False
                            ) -> list[list[dict]]:
        """One list per instance: the claimed host, then alternates."""
        return self._guard("select_destinations", ctxt, self._select,
                           ctxt, request_spec, instance_uuids,
                           return_alternates)

    @oslo_messaging.expected_exceptions(exception.InvalidRequest,
                                        exception.NoValidHost,
                                        rpc.SchedulerInternalError)
    @arguments.checked
    def explain(self, ctxt: dict, request_spec: dict) -> dict:
        """The decision for one instance, per host, without a claim."""
        return self._guard("explain", ctxt, self._explain, request_spec)

    @oslo_messaging.expected_exceptions(exception.InvalidRequest,
                                        exception.NoValidHost,
                                        rpc.SchedulerInternalError)
    @arguments.checked
    def release(self, ctxt: dict, instance_uuid: str) -> bool:
        """Free the instance's claim; False when it held none."""
        return self._guard("release", ctxt, self._release, instance_uuid)

    @oslo_messaging.expected_exceptions(exception.InvalidRequest,
                                        exception.NoValidHost,
                                        rpc.SchedulerInternalError)
    @arguments.checked
    def balance(self, ctxt: dict, cluster: str | None = None,
                dry_run: bool = False,
                migration_policy: str | None = None) -> list[dict]:
        """One balancing tick now; the migrations planned (API 1.1)."""
        return self._guard("balance", ctxt, self._balance, cluster,
                           dry_run, migration_policy)

    def _balance(self, cluster: object, dry_run: object,
                 migration_policy: object) -> list[dict]:
        for name, value in (("cluster", cluster),
                            ("migration_policy", migration_policy)):
            if value is not None and not isinstance(value, str):
                raise _wrong_type(name, value, "string")
            # The cluster names a database lock and is compared in queries.
            request_values.check_text(value, name)
        return self.manager.balance(cluster, check_bool(dry_run, "dry_run"),
                                    migration_policy)

    def _select(self, ctxt: dict, request_spec: object,
                instance_uuids: object, return_alternates: object
                ) -> list[list[dict]]:
        try:
            spec = check_request_spec(request_spec)
            alternates = check_bool(return_alternates, "return_alternates")
        except exception.InvalidRequest as e:
            # Refused before the manager, which logs and counts the rest.
            observability.DecisionReport().finish(
                "invalid_request", detail=("error", str(e)))
            raise
        uuids = instance_uuids
        self._notify(ctxt, rpc.SELECT_START, {
            "request_spec": spec, "instance_uuids": uuids,
            "return_alternates": alternates})
        outcome: dict[str, Any] = {"instance_uuids": uuids,
                                   "selections": None, "error": None}
        try:
            selections = self.manager.select_destinations(spec, uuids,
                                                          alternates)
            outcome["selections"] = selections
            return selections
        except Exception as e:
            # Observers pair start with end; the end says how it went.
            outcome["error"] = {"class": type(e).__name__,
                                "message": str(e)}
            raise
        finally:
            self._notify(ctxt, rpc.SELECT_END, outcome)

    def _explain(self, request_spec: object) -> dict:
        return self.manager.explain(check_request_spec(request_spec))

    def _release(self, instance_uuid: object) -> bool:
        return bool(self.manager.release(instance_uuid))

    def _notify(self, ctxt: dict, event_type: str, payload: dict) -> None:
        if self.notifier is None:
            return
        # Queued: sent after the reply, whatever state the bus is in.
        self.notifier.info(ctxt, event_type, payload)

    def _guard(self, method: str, ctxt: dict, func: Callable[..., Any],
               *args: object) -> Any:
        rid = request_id(ctxt)
        started = time.monotonic()
        # The manager's decision line (INFO, every select_destinations
        # outcome) carries the request id and supersedes the INFO lines
        # below for that method.
        logged = method == "select_destinations"
        token = observability.request_id.set(rid)
        try:
            result = func(*args)
        # Rebuilt as the base classes: a subclass such as InvalidExtraSpec
        # takes several constructor arguments, and the client can only
        # rebuild an exception from its single message.
        except exception.NoValidHost as e:
            if not logged:
                LOG.info("%s (request %s): no valid host: %s", method, rid,
                         e)
            raise exception.NoValidHost(str(e)) from None
        except exception.InvalidRequest as e:
            if not logged:
                LOG.info("%s (request %s): invalid request: %s", method,
                         rid, e)
            raise exception.InvalidRequest(str(e)) from None
        except exception.SchedulerError as e:
            # Raised on purpose with a complete message (database down,
            # lock timeout): not a bug, no traceback.
            LOG.error("%s (request %s) failed: %s", method, rid, e)
            raise rpc.SchedulerInternalError(
                f"{method} failed in the scheduler service on host "
                f"{self.host}: {e} (request {rid})") from None
        except Exception as e:
            LOG.exception("%s (request %s) failed unexpectedly", method, rid)
            raise rpc.SchedulerInternalError(
                f"{method} failed in the scheduler service on host "
                f"{self.host}: {type(e).__name__}: {e} (request {rid}; the "
                "traceback is in that service's log)") from None
        finally:
            observability.request_id.reset(token)
        elapsed_ms = (time.monotonic() - started) * 1000
        if method == "select_destinations":
            LOG.debug("%s (request %s) in %.1f ms: %s", method, rid,
                      elapsed_ms, _selection_summary(result))
        else:
            LOG.debug("%s (request %s) in %.1f ms", method, rid, elapsed_ms)
        return result


def _notification_url(conf: cfg.ConfigOpts) -> str:
    return (conf.oslo_messaging_notifications.transport_url
            or conf.transport_url or "")


def _sends_notifications(conf: cfg.ConfigOpts) -> bool:
    drivers = conf.oslo_messaging_notifications.driver
    return any(driver != "noop" for driver in drivers)


def _crosses_processes(url: str) -> bool:
    """False for the transports a child process cannot share."""
    return url.partition(":")[0] not in rpc.IN_PROCESS_TRANSPORTS


class SchedulerRPCService:
    """Transports, notifier and RPC server of one scheduler process.

    Transports passed in are the caller's to clean up; the ones created here
    are cleaned up by ``stop``. ``start`` blocks until the broker accepted
    the consumers; oslo.messaging retries an unreachable broker forever,
    logging each attempt, and ``stop`` may be called from another thread
    meanwhile.
    """

    def __init__(self, conf: cfg.ConfigOpts, manager: Manager,
                 transport: oslo_messaging.Transport | None = None,
                 notification_transport: oslo_messaging.Transport | None
                 = None, command_line: Sequence[str] | None = None):
        messaging_conf.register_messaging_opts(conf)
        self.conf = conf
        self._owned: list[oslo_messaging.Transport] = []
        if transport is None:
            transport = oslo_messaging.get_rpc_transport(
                conf, allowed_remote_exmods=rpc.ALLOWED_REMOTE_EXMODS)
            self._owned.append(transport)
        self.transport = transport
        self.notifier: Notifier
        if (notification_transport is None and command_line is not None
                and _sends_notifications(conf)
                and _crosses_processes(_notification_url(conf))):
            self.notifier = notification_process.ProcessNotifier(
                command_line, conf.prog)
        else:
            if notification_transport is None:
                notification_transport = (
                    oslo_messaging.get_notification_transport(conf))
                self._owned.append(notification_transport)
            self.notifier = notifications.BackgroundNotifier(
                notifications.create_notifier(conf, notification_transport))
        self.endpoint = SchedulerEndpoint(manager, conf.host, self.notifier)
        self.target = oslo_messaging.Target(topic=conf.scheduler_topic,
                                            server=conf.host)
        self.server = oslo_messaging.get_rpc_server(
            transport, self.target, [self.endpoint],
            access_policy=oslo_messaging.DefaultRPCAccessPolicy)
        self._lock = threading.Lock()
        self._started = threading.Event()
        self._stopped = False

    @property
    def started(self) -> bool:
        """True once the server consumes from the broker."""
        return self._started.is_set()

    def start(self) -> bool:
        """Declare the queues and start consuming; False when ``stop`` was
        called first."""
        with self._lock:
            if self._stopped:
                return False
        self.server.start()
        with self._lock:
            self._started.set()
            stopped = self._stopped
        if stopped:
            # stop() ran while we were connecting and left the server to us.
            self._stop_server()
        return not stopped

    def wait_started(self, timeout: float | None = None) -> bool:
        return self._started.wait(timeout)

    def stop(self) -> None:
        """Stop consuming, let running requests finish, close transports.

        While ``start`` is still waiting for the broker this only marks the
        service stopped: oslo.messaging's stop() would block until the
        broker came back (it waits for start to complete).
        """
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            started = self._started.is_set()
        if started:
            self._stop_server()

    def periodic_balancer(self) -> "PeriodicBalancer | None":
        """Start the balancing loop of ``[balancer] interval`` (None when
        it is 0); every migration planned, by the loop or the
        ``balance`` call, is notified as ``MIGRATION_PLANNED``."""
        planner = getattr(self.endpoint.manager, "planner", None)
        if planner is None:
            return None
        planner.on_planned = functools.partial(
            self.notifier.info, {}, rpc.MIGRATION_PLANNED)
        balancing = PeriodicBalancer(self.conf, planner)
        return balancing if balancing.start() else None

    def _stop_server(self) -> None:
        self.server.stop()
        self.server.wait()
        self.notifier.stop()
        for transport in self._owned:
            transport.cleanup()


class SchedulerWorker(oslo_service.ServiceBase):
    """One process serving the RPC API.

    ``manager`` is used as is when given (single process). Otherwise
    ``start`` calls ``manager_factory(conf)`` after dropping the database
    connections inherited from the parent, which a forked worker must
    never share. With ``command_line`` (the service's arguments) its
    notifications are sent by a child process started with them
    (``notification_process``), else by a thread.
    """

    def __init__(self, conf: cfg.ConfigOpts, manager: Manager | None = None,
                 manager_factory: Callable[[cfg.ConfigOpts], Manager]
                 | None = None, command_line: Sequence[str] | None = None):
        super().__init__()
        if manager is None and manager_factory is None:
            raise ValueError("a manager or a manager_factory is required")
        self.conf = conf
        self.manager = manager
        self.manager_factory = manager_factory
        self.command_line = command_line
        self.rpc_service: SchedulerRPCService | None = None
        self.balancing: PeriodicBalancer | None = None
        self._host_manager: HostManager | None = None
        self._stopped = threading.Event()

    def start(self) -> None:
        """Connect to the broker and serve; blocks while the broker is
        unreachable (oslo.messaging retries forever)."""
        manager = self.manager
        if manager is None:
            db_api.dispose_engines()
            manager = self.manager_factory(self.conf)
        if self._stopped.is_set():
            return
        # Here, not in the manager: this runs in the worker after the
        # fork, and threads do not survive one. The first load starts
        # now, while the broker connects.
        host_manager = getattr(manager, "host_manager", None)
        if host_manager is not None:
            host_manager.start_background_refresh()
            self._host_manager = host_manager
        manager.resume_releases()
        self.rpc_service = SchedulerRPCService(
            self.conf, manager, command_line=self.command_line)
        if self._stopped.is_set():
            self.rpc_service.stop()
            return
        self.balancing = self.rpc_service.periodic_balancer()
        broker = rpc.safe_transport_url(self.conf.transport_url)
        LOG.info("Connecting to message broker %s", broker)
        notice = threading.Timer(BROKER_WAIT_NOTICE, LOG.warning, args=(
            "Message broker %s is not reachable yet; retrying until it is "
            "(oslo.messaging logs each attempt, waiting up to "
            "[oslo_messaging_rabbit] rabbit_interval_max s in between). "
            "SIGTERM stops the service.", broker))
        notice.daemon = True
        notice.start()
        started = time.monotonic()
        try:
            if not self.rpc_service.start():
                return
        finally:
            notice.cancel()
        waited = time.monotonic() - started
        LOG.info("Serving topic %s (exchange %s, server %s) on %s%s",
                 self.conf.scheduler_topic, self.conf.control_exchange,
                 self.conf.host, broker,
                 f" after waiting {waited:.0f} s for the broker"
                 if waited >= BROKER_WAIT_NOTICE else "")

    def stop(self, graceful: bool = True) -> None:
        """Stop balancing and consuming; finish the requests in
        progress."""
        self._stopped.set()
        if self.balancing is not None:
            self.balancing.stop()
        if self.rpc_service is not None:
            self.rpc_service.stop()
        if self._host_manager is not None:
            # After the requests in progress, which may still refresh.
            self._host_manager.close()

    def wait(self) -> None:
        self._stopped.wait()

    def reset(self) -> None:
        """Nothing cached needs resetting on SIGHUP."""


def run_workers(conf: cfg.ConfigOpts, workers: int,
                manager_factory: Callable[[cfg.ConfigOpts], Manager],
                command_line: Sequence[str] | None = None) -> int:
    """Fork ``workers`` processes serving the API and supervise them until
    SIGTERM; returns the exit status (0 after SIGTERM).

    oslo.service's launcher (cotyledon under the threading backend)
    restarts a worker that dies, at most one per second, and stops them all
    on SIGTERM, waiting up to ``[DEFAULT] graceful_shutdown_timeout``.
    """
    launcher = oslo_service.ProcessLauncher(conf, restart_method="mutate")
    launcher.launch_service(
        SchedulerWorker(conf, manager_factory=manager_factory,
                        command_line=command_line),
        workers=workers)
    try:
        status = launcher.wait()
    except SystemExit as e:
        # The launcher ends the parent with sys.exit(0) after SIGTERM.
        status = e.code
    return status if isinstance(status, int) else 0
