"""Notifications sent off the request path.

``BackgroundNotifier`` takes a notification in a few microseconds and
sends it from a thread of its own, so that a reply never waits for the
broker. Notifications leave in the order they were given (one sender,
one FIFO queue); what does not fit in the bounded queue, or cannot be
sent, is dropped and counted. Driver, topics and retry are those of the
wrapped ``oslo_messaging.Notifier`` (``[oslo_messaging_notifications]``).

While the broker is unreachable oslo.messaging logs every notification it
fails to send with a traceback and the whole payload; those records,
emitted in the sender thread, are swallowed here and replaced by one line
when sending starts failing and one when it works again.
"""

import contextlib
import dataclasses
import logging as std_logging
import queue
import threading
import time

import oslo_messaging
from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

#: Notifications waiting to be sent; more are dropped (counted).
QUEUE_SIZE = 1000

#: Loggers of oslo.messaging's notifier and its messaging drivers, which
#: report a failed send with a traceback instead of raising it.
_SEND_FAILURE_LOGGERS = ("oslo_messaging.notify.notifier",
                         "oslo_messaging.notify.messaging")

_STOP = object()


def publisher_id(conf: cfg.ConfigOpts) -> str:
    """``scheduler.<host>``: who the notifications are from."""
    return f"scheduler.{conf.host}"


def create_notifier(conf: cfg.ConfigOpts,
                    transport: oslo_messaging.Transport
                    ) -> oslo_messaging.Notifier:
    """Notifier of ``scheduler.<host>``; driver, topics and retry come from
    ``[oslo_messaging_notifications]`` (no driver, nothing sent, by
    default)."""
    return oslo_messaging.Notifier(transport,
                                   publisher_id=publisher_id(conf))


@dataclasses.dataclass
class NotificationStats:
    """What a BackgroundNotifier did since it started."""

    sent: int = 0
    #: Not sent: the queue was full, or the send failed.
    dropped: int = 0
    #: Periods during which notifications were being dropped.
    outages: int = 0


class _SendFailures(std_logging.Filter):
    """Swallows the send-failure records of one thread, remembering the
    first one's message."""

    def __init__(self) -> None:
        super().__init__()
        self.thread_id: int | None = None
        self.failure: str | None = None

    def filter(self, record: std_logging.LogRecord) -> bool:
        if record.thread != self.thread_id:
            return True
        if self.failure is None:
            error = record.exc_info[1] if record.exc_info else None
            self.failure = (f"{type(error).__name__}: {error}" if error
                            else record.getMessage().split(". ")[0])
        return False


class BackgroundNotifier:
    """``info()`` like ``oslo_messaging.Notifier``, sent by a daemon
    thread started on the first call; ``stop()`` sends what is queued (for
    at most ``timeout`` seconds) and ends the thread."""

    def __init__(self, notifier: oslo_messaging.Notifier,
                 queue_size: int = QUEUE_SIZE):
        self.notifier = notifier
        self.stats = NotificationStats()
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._failures = _SendFailures()
        self._failing = False
        self._stopped = False

    def info(self, ctxt: dict, event_type: str, payload: dict) -> None:
        """Queue an INFO notification; ``ctxt`` is the RPC context dict."""
        with self._lock:
            if self._stopped:
                return
            if self._thread is None:
                self._start()
        try:
            self._queue.put_nowait((ctxt, event_type, payload))
        except queue.Full:
            self._dropped("the queue of notifications to send is full "
                          f"({self._queue.maxsize})")

    def stop(self, timeout: float = 5.0) -> None:
        """Send what is queued, then end the sender thread."""
        with self._lock:
            self._stopped = True
            thread = self._thread
        if thread is None:
            return
        deadline = time.monotonic() + timeout
        # Still full at the deadline: the daemon thread dies with the
        # process.
        with contextlib.suppress(queue.Full):
            self._queue.put(_STOP, timeout=timeout)
        thread.join(max(0.0, deadline - time.monotonic()))

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="notification-sender")
        self._thread.start()
        self._failures.thread_id = self._thread.ident
        for name in _SEND_FAILURE_LOGGERS:
            std_logging.getLogger(name).addFilter(self._failures)

    def _run(self) -> None:
        try:
            while True:
                item = self._queue.get()
                if item is _STOP:
                    return
                self._send(*item)
        finally:
            for name in _SEND_FAILURE_LOGGERS:
                std_logging.getLogger(name).removeFilter(self._failures)

    def _send(self, ctxt: dict, event_type: str, payload: dict) -> None:
        # The notifier drops a plain dict context (it can only redact
        # secrets from a RequestContext); this one keeps the request id.
        context = oslo_context.RequestContext.from_dict(
            ctxt if isinstance(ctxt, dict) else {}, overwrite=False)
        self._failures.failure = None
        try:
            self.notifier.info(context, event_type, payload)
        except Exception as e:
            # Drivers report failures by logging them; one that raises
            # is handled alike.
            self._failures.failure = f"{type(e).__name__}: {e}"
        failure = self._failures.failure
        if failure is not None:
            self._dropped(failure)
            return
        with self._lock:
            self.stats.sent += 1
            recovered = self._failing
            self._failing = False
            dropped = self.stats.dropped
        if recovered:
            LOG.info("Notifications are sent again (%d dropped since this "
                     "service started)", dropped)

    def _dropped(self, reason: str) -> None:
        with self._lock:
            self.stats.dropped += 1
            started = not self._failing
            if started:
                self._failing = True
                self.stats.outages += 1
        if started:
            LOG.warning("Dropping notifications until they can be sent "
                        "again: %s", reason)
