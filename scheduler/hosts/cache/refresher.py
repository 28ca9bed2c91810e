"""Full loads of the host cache in the background.

A full load reads every ``compute_nodes`` row and claim: at 100,000 hosts
it takes seconds, which on the request path (``HostManager``'s default)
is the p99 of every request that comes due for it. A serving process
hands full loads to a ``Refresher``: a daemon thread that does the first
load at once, then every ``[filter_scheduler] full_refresh_interval``
seconds builds the new cache outside the request lock and swaps it in
(``HostManager.reload()``); requests meanwhile use the current cache and
read only what changed.

A plain daemon thread rather than oslo.service's looping call: the
scheduler runs no eventlet hub, the loop is a dozen lines, and the cache's
owner is the ``HostManager``, which commands and tests use without any
oslo.service service around it.

Threads do not survive ``fork()``: the refresher of a process that forked
is dead in the child (``alive`` False), where the cache then falls back to
full loads on the request path until ``start_background_refresh()`` is
called there; ``SchedulerWorker.start`` calls it in each worker.
"""

import os
import threading
import time
from typing import TYPE_CHECKING

from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from scheduler.db import api as db_api

if TYPE_CHECKING:
    # The manager imports this module: no cycle at run time.
    from scheduler.hosts.cache.manager import HostManager

LOG = logging.getLogger(__name__)

#: Seconds before the first retry of a failed load; doubled on each
#: failure up to ``full_refresh_interval``.
FIRST_RETRY = 1.0

#: The share of the time a load works; it sleeps the rest. Requests share
#: the GIL with the load (half each while both run), so a load at full
#: speed doubles their latency while it lasts; at a quarter they lose a
#: quarter, and a load of 100,000 hosts (~2 s of work) takes ~8 s, well
#: inside the default interval.
DUTY = 0.25


class Stopped(Exception):
    """The refresher was stopped during a load, which is abandoned."""


class _Pacer:
    """Sleeps after each slice of a load in proportion to its work."""

    def __init__(self, stop: threading.Event):
        self._stop = stop
        self._mark = time.perf_counter()

    def __call__(self) -> None:
        worked = time.perf_counter() - self._mark
        if self._stop.wait(worked * (1 - DUTY) / DUTY):
            raise Stopped
        self._mark = time.perf_counter()


class Refresher:
    """The background full loads of one ``HostManager``."""

    def __init__(self, manager: "HostManager"):
        self._manager = manager
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._done = threading.Condition()
        #: Loads completed and failed, for tests and benchmarks.
        self.loads = 0
        self.failures = 0
        # Loads begun, and which of them last completed: load_now() waits
        # for one that began after it was called.
        self._begun = 0
        self._loaded = 0
        self._pid = os.getpid()
        self._thread = threading.Thread(
            target=self._run, name="host-cache-refresher", daemon=True)

    @property
    def alive(self) -> bool:
        """True while the thread runs in this process (not in a child
        forked since, nor after ``stop()``)."""
        return (self._pid == os.getpid() and self._thread.is_alive()
                and not self._stop.is_set())

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop the loop; waits for a load in progress (up to
        ``timeout``), so that no thread outlives its manager."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and self._pid == os.getpid():
            self._thread.join(timeout)
        with self._done:
            # No load is coming: load_now() callers stop waiting.
            self._done.notify_all()

    def load_now(self, loads: int | None = None,
                 timeout: float | None = None) -> bool:
        """Start the next load now and wait until ``loads`` loads have
        completed, or by default until a load that began after this call
        has (one already running may have read the database before what
        the caller just changed); False on timeout or once stopped."""
        with self._done:
            after = self._begun
        self._wake.set()

        def loaded() -> bool:
            if loads is None:
                return self._loaded > after
            return self.loads >= loads

        with self._done:
            self._done.wait_for(lambda: loaded() or self._stop.is_set(),
                                timeout)
            return loaded()

    def run_once(self) -> bool:
        """One load: the first on the request path's terms (a request
        arriving meanwhile waits for it rather than loading again), the
        next ones swapped in. False when it failed, which is logged and
        leaves the cache as it was."""
        manager = self._manager
        with self._done:
            self._begun += 1
            this_load = self._begun
        try:
            if manager.last_refresh is None:
                manager.host_states()
            else:
                manager.reload(pace=_Pacer(self._stop))
        except Stopped:
            return False
        except Exception as e:
            if isinstance(e, sa_exc.SQLAlchemyError):
                # The database away or without the schema: the requests
                # say so on their own; one line, no traceback per retry.
                LOG.warning("Full load of the host cache failed, requests "
                            "keep the cache they have: %s",
                            db_api.one_line(e))
            else:
                LOG.exception("Full load of the host cache failed; "
                              "requests keep the cache they have")
            with self._done:
                self.failures += 1
                self._done.notify_all()
            return False
        with self._done:
            self.loads += 1
            # Loads run one at a time but for run_once() called by hand
            # beside the thread: the newest begun counts.
            self._loaded = max(self._loaded, this_load)
            self._done.notify_all()
        return True

    def _run(self) -> None:
        delay = FIRST_RETRY
        while not self._stop.is_set():
            # Cleared before the load: a load_now() during it is a wish
            # for the next one.
            self._wake.clear()
            interval = self._manager.conf.filter_scheduler.\
                full_refresh_interval
            if self.run_once():
                delay, wait = FIRST_RETRY, interval
            else:
                # Soon, then less often: a database that is down is not
                # hammered, one that blipped is retried within a second.
                wait, delay = min(delay, interval), min(delay * 2, interval)
            self._wake.wait(wait)
