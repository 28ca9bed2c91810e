"""The balancing loop of scheduler-service: one tick every ``[balancer]
interval`` seconds."""

import contextlib

from oslo_config import cfg
from oslo_log import log as logging

from scheduler.conf import messaging as messaging_conf
from scheduler.db import api as db_api
from scheduler.placement.balance_planner import BalancePlanner

LOG = logging.getLogger(__name__)


class PeriodicBalancer:
    """Runs ``BalancePlanner.balance()`` in a daemon thread (an oslo.service
    looping call on its threading backend).

    Every worker of every service runs one; a tick skips the clusters
    where any worker planned a migration less than an interval ago, so
    that together they plan at most one per cluster and interval, as
    oVirt does. A tick that fails (database away, a bug) is logged on one
    line and the next tick runs as usual.
    """

    def __init__(self, conf: cfg.ConfigOpts, planner: BalancePlanner):
        self.conf = conf
        self.planner = planner
        self._loop = None
        self._done = None

    @property
    def interval(self) -> int:
        return self.conf.balancer.interval

    def start(self) -> bool:
        """Start ticking; False when ``[balancer] interval`` is 0."""
        if not self.interval:
            return False
        # oslo.service picks its backend when a looping call is first
        # looked up, eventlet unless told otherwise: the service runs on
        # threads (docs/architecture.md), and a greenthread would never run in
        # it.
        messaging_conf.use_threading_backend()
        from oslo_service import loopingcall

        # Dynamic, not fixed: the next tick comes an interval after the
        # previous one ended, however long it took, and the first one an
        # interval after the start.
        self._loop = loopingcall.DynamicLoopingCall(self._tick)
        self._done = self._loop.start(initial_delay=self.interval)
        return True

    def stop(self, timeout: float | None = None) -> None:
        if self._loop is None:
            return
        self._loop.stop()
        # Waits for a tick in progress; RuntimeError: still running after
        # ``timeout`` (the thread is a daemon).
        with contextlib.suppress(RuntimeError):
            self._done.wait(timeout)

    def tick(self) -> list[dict]:
        """One balancing tick; the migrations it planned."""
        try:
            planned = self.planner.balance(spacing=self.interval * 0.9)
        except Exception as e:  # the loop outlives any one tick
            LOG.error("Balancing tick failed: %s: %s", type(e).__name__,
                      db_api.one_line(e))
            return []
        return [migration.as_dict() for migration in planned]

    def _tick(self) -> int:
        # The looping call's function: its result is the wait before the
        # next tick.
        self.tick()
        return self.interval
