"""Notifications sent by a child process of each service worker.

oslo.messaging spends about 0.6 ms of CPU on each notification it sends
(serialisation, kombu, publisher confirms), two per ``select_destinations``.
Sent by a thread of the worker, as ``notifications.BackgroundNotifier``
does, that CPU competes with the requests for the worker's interpreter
lock: about a quarter of a worker's time per decision. ``ProcessNotifier``
hands each notification, pickled, to a child process instead, which runs
a ``BackgroundNotifier`` of its own on a transport of its own: the same
order, drop counting and outage logging, on another core.

The child is started with the service's own command line, so it reads
the same configuration files and logs where the service logs. It stops
when the worker stops it, and by itself when the worker dies (its end of
the pipe closes); should it die, the worker starts another one.
"""

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import threading
import time
from collections.abc import Sequence

import oslo_messaging
from oslo_config import cfg
from oslo_log import log as logging

from scheduler import conf as scheduler_conf
from scheduler.conf import cli
from scheduler.conf import messaging as messaging_conf
from scheduler.rpc import notifications

LOG = logging.getLogger(__name__)

PROG = "scheduler-notifications"

# None, not object(): the sentinel crosses the pipe pickled.
_STOP = None

#: Seconds the child gets to send what it holds once told to stop.
_FINISH_TIMEOUT = 5.0

#: A sender process that ends sooner than this (seconds) is replaced
#: after a wait, doubling from 1 s up to _MAX_BACKOFF.
_HEALTHY_LIFETIME = 10.0
_MAX_BACKOFF = 60.0


def serve_notifications(command_line: list[str], prog: str,
                        items: multiprocessing.connection.Connection
                        ) -> None:
    """The child: send what arrives on ``items`` until told to stop or
    the worker's end of the pipe closes (the worker is gone).

    ``prog`` is the service's program name: oslo.config looks for the
    same default configuration files, and oslo.log names the same log
    file, as for the service.
    """
    # The service's signals are the service's: it stops this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    messaging_conf.register_messaging_opts(conf)
    cli.parse(prog, conf, command_line, "scheduler")
    if conf.log_dir and not conf.log_file:
        # oslo.log would name it after this process's entry point.
        conf.set_override("log_file", os.path.join(conf.log_dir,
                                                   f"{prog}.log"))
    logging.setup(conf, "scheduler")
    transport = oslo_messaging.get_notification_transport(conf)
    sender = notifications.BackgroundNotifier(
        notifications.create_notifier(conf, transport))
    try:
        while True:
            try:
                item = items.recv()
            except EOFError:
                return
            if item is _STOP:
                return
            sender.info(*item)
    finally:
        sender.stop()
        transport.cleanup()


class ProcessNotifier:
    """``info()`` and ``stop()`` like ``notifications.BackgroundNotifier``,
    sent by a child process started with ``command_line`` (the service's
    arguments) and ``prog`` (its program name).

    ``info`` only queues: a thread of the worker, the only one to touch
    the child and its pipe, hands the queue over. What does not fit in
    the bounded queue, or cannot be pickled, is dropped and counted in
    ``stats.dropped``; what the child sends or fails to send is counted
    and logged by the child. A child found dead is replaced (after a
    wait if it keeps dying young), and the notification being handed
    over goes to the new one; those the dead one had received but not
    sent are lost with it.
    """

    def __init__(self, command_line: Sequence[str], prog: str,
                 queue_size: int = notifications.QUEUE_SIZE):
        self._context = multiprocessing.get_context("spawn")
        self._arguments = (list(command_line), prog)
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self.stats = notifications.NotificationStats()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._full = False
        # Our own backoff rather than tenacity's: it outlives one attempt
        # (a child that dies young grows it, one that lived long resets
        # it), and its wait must end at once when stop() sets _stopped.
        self._backoff = 0.0
        self._started = 0.0
        self._process: multiprocessing.process.BaseProcess | None = None
        self._pipe: multiprocessing.connection.Connection | None = None
        self._feeder = threading.Thread(target=self._feed, daemon=True,
                                        name="notification-feeder")
        self._feeder.start()

    def info(self, ctxt: dict, event_type: str, payload: dict) -> None:
        """Queue an INFO notification; ``ctxt`` is the RPC context dict."""
        if self._stopped.is_set():
            return
        try:
            self._queue.put_nowait((ctxt, event_type, payload))
        except queue.Full:
            self._dropped("the queue of the notification sender process "
                          f"is full ({self._queue.maxsize})")
            return
        with self._lock:
            recovered, self._full = self._full, False
        if recovered:
            LOG.info("Notifications are queued again (%d dropped since "
                     "this service started)", self.stats.dropped)

    def _dropped(self, reason: str) -> None:
        with self._lock:
            self.stats.dropped += 1
            started, self._full = not self._full, True
        if started:
            LOG.warning("Dropping notifications: %s", reason)

    def stop(self, timeout: float = 5.0) -> None:
        """Let the child send what is queued (for at most ``timeout``
        seconds), then end it."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        deadline = time.monotonic() + timeout
        with contextlib.suppress(queue.Full):
            self._queue.put(_STOP, timeout=timeout)
        self._feeder.join(max(deadline - time.monotonic(), 0.0))
        process = self._process
        if self._feeder.is_alive() and process is not None:
            # Stuck on a child that takes nothing: ending it unblocks the
            # feeder, which starts no other once stopped.
            process.terminate()
            self._feeder.join(1.0)

    # The feeder thread

    def _feed(self) -> None:
        # Started at once: a first notification need not wait for it.
        self._start()
        while True:
            item = self._queue.get()
            if item is _STOP:
                self._finish()
                return
            self._hand_over(item)

    def _hand_over(self, item: tuple) -> None:
        while True:
            if self._pipe is None and not self._start():
                if self._stopped.is_set():
                    return
                continue
            try:
                self._pipe.send(item)
                return
            except OSError:
                # The child is gone: the next round starts another.
                self._ended()
                if self._stopped.is_set():
                    return
            except Exception as e:
                # Not picklable: this one only.
                self._dropped(f"{item[1]} cannot be sent to the sender "
                              f"process ({type(e).__name__}: {e})")
                return

    def _start(self) -> bool:
        """Start a child, after the backoff; False when it failed."""
        if self._stopped.wait(self._backoff):
            return False
        reader, writer = self._context.Pipe(duplex=False)
        process = self._context.Process(
            target=serve_notifications, name=PROG, daemon=True,
            args=(*self._arguments, reader))
        try:
            process.start()
        except OSError as e:
            writer.close()
            self._backoff = min(max(self._backoff * 2, 1.0), _MAX_BACKOFF)
            LOG.error("Could not start a notification sender process "
                      "(%s); trying again in %g s", e, self._backoff)
            return False
        finally:
            # The child has its own copy: with this one closed, a write to
            # a dead child fails instead of filling the pipe.
            reader.close()
        self._process, self._pipe = process, writer
        self._started = time.monotonic()
        return True

    def _ended(self) -> None:
        process, pipe = self._process, self._pipe
        self._process = self._pipe = None
        pipe.close()
        process.join(1.0)
        lived = time.monotonic() - self._started
        # A child that keeps dying young is not restarted in a tight loop.
        self._backoff = (0.0 if lived >= _HEALTHY_LIFETIME
                         else min(max(self._backoff * 2, 1.0), _MAX_BACKOFF))
        if not self._stopped.is_set():
            LOG.warning("The notification sender process %s ended (exit "
                        "code %s) after %.0f s; starting another%s",
                        process.pid, process.exitcode, lived,
                        f" in {self._backoff:g} s" if self._backoff else "")

    def _finish(self) -> None:
        process, pipe = self._process, self._pipe
        if process is None:
            return
        with contextlib.suppress(OSError):
            pipe.send(_STOP)
        process.join(_FINISH_TIMEOUT)
        if process.is_alive():
            process.terminate()
            process.join(1.0)
        pipe.close()
        self._process = self._pipe = None
