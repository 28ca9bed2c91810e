"""The processes serving the RPC endpoint of ``scheduler-service``
(docs/architecture.md); the endpoint itself is ``scheduler.rpc.endpoint``,
whose names are also imported from here.

``SchedulerRPCService`` owns the transports, the notifier (sending from a
background thread: ``scheduler.rpc.notifications``) and the RPC server of
one process; ``SchedulerWorker`` is that process as an oslo.service
service, and ``run_workers`` forks several of them.
"""

import functools
import logging as std_logging
import threading
import time
from collections.abc import Callable
from collections.abc import Sequence

import oslo_messaging
from oslo_config import cfg
from oslo_log import log as logging
from oslo_service import service as oslo_service

from scheduler import rpc
from scheduler.conf import messaging as messaging_conf
from scheduler.db import api as db_api
from scheduler.hosts.cache.manager import HostManager
from scheduler.placement.balance_task import PeriodicBalancer
from scheduler.rpc import notification_process
from scheduler.rpc import notifications
from scheduler.rpc.endpoint import Manager
from scheduler.rpc.endpoint import Notifier
from scheduler.rpc.endpoint import SchedulerEndpoint
from scheduler.rpc.endpoint import check_bool
from scheduler.rpc.endpoint import check_request_spec
from scheduler.rpc.endpoint import request_id

__all__ = [
    "BROKER_WAIT_NOTICE",
    "Manager",
    "Notifier",
    "SchedulerEndpoint",
    "SchedulerRPCService",
    "SchedulerWorker",
    "check_bool",
    "check_request_spec",
    "request_id",
    "run_workers",
]

LOG = logging.getLogger(__name__)

#: After this long without a broker connection, a worker says so once in
#: its own words next to oslo.messaging's per-attempt "Connection failed".
BROKER_WAIT_NOTICE = 5.0


def _notification_url(conf: cfg.ConfigOpts) -> str:
    return (conf.oslo_messaging_notifications.transport_url
            or conf.transport_url or "")


def _sends_notifications(conf: cfg.ConfigOpts) -> bool:
    drivers = conf.oslo_messaging_notifications.driver
    return any(driver != "noop" for driver in drivers)


def _crosses_processes(url: str) -> bool:
    """False for the transports a child process cannot share."""
    return url.partition(":")[0] not in rpc.IN_PROCESS_TRANSPORTS


class _NoHostnameNotice(std_logging.Filter):
    """Drops kombu's "No hostname was supplied" of an in-process bus,
    which has no host to supply."""

    def filter(self, record: std_logging.LogRecord) -> bool:
        return not str(record.msg).startswith("No hostname was supplied")


_NO_HOSTNAME_NOTICE = _NoHostnameNotice()


def quiet_in_process_bus(conf: cfg.ConfigOpts) -> None:
    """Silence the WARNINGs kombu+memory gives at every start (no
    hostname, no heartbeat): true of any in-process bus, so noise. A
    broker's, where they mean something, are kept."""
    urls = [conf.transport_url or ""]
    if _sends_notifications(conf):
        urls.append(_notification_url(conf))
    if any(_crosses_processes(url) for url in urls):
        return
    conf.set_override("heartbeat_timeout_threshold", 0,
                      group="oslo_messaging_rabbit")
    std_logging.getLogger("kombu.connection").addFilter(_NO_HOSTNAME_NOTICE)


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
            quiet_in_process_bus(conf)
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
