"""The balancing loop of scheduler-service: one tick every ``[balancer]
interval`` seconds."""

import threading

from oslo_config import cfg
from oslo_log import log as logging

from scheduler.balancer.planner import BalancePlanner
from scheduler.db import api as db_api

LOG = logging.getLogger(__name__)


class PeriodicBalancer:
    """Runs ``BalancePlanner.balance()`` in a daemon thread.

    A plain thread, not oslo.service's DynamicLoopingCall: with the
    looping call (its threading backend) the functional test
    ``test_notifications_are_sent_by_a_process_of_their_own`` failed in
    4 of 5, then 4 of 6 runs. It also fails, less often, with this
    thread (a sender that replaced a killed one sends nothing): the cause
    is not found, and the looping call waits until it is.

    Every worker of every service runs one; a tick skips the clusters
    where any worker planned a migration less than an interval ago, so
    that together they plan at most one per cluster and interval, as
    oVirt does. A tick that fails (database away, a bug) is logged on one
    line and the next tick runs as usual.
    """

    def __init__(self, conf: cfg.ConfigOpts, planner: BalancePlanner):
        self.conf = conf
        self.planner = planner
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def interval(self) -> int:
        return self.conf.balancer.interval

    def start(self) -> bool:
        """Start ticking; False when ``[balancer] interval`` is 0."""
        if not self.interval:
            return False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="balancer")
        self._thread.start()
        return True

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def tick(self) -> list[dict]:
        """One balancing tick; the migrations it planned."""
        try:
            planned = self.planner.balance(spacing=self.interval * 0.9)
        except Exception as e:  # the loop outlives any one tick
            LOG.error("Balancing tick failed: %s: %s", type(e).__name__,
                      db_api.one_line(e))
            return []
        return [migration.as_dict() for migration in planned]

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()
