"""Client of the scheduler's RPC API: what API nodes import
(docs/architecture.md).

::

    from scheduler.rpc import rpcapi

    api = rpcapi.SchedulerAPI()            # reads cfg.CONF
    hosts = api.select_destinations(spec, [instance_uuid],
                                    return_alternates=True)

Every call is bounded: a reply must arrive within ``timeout`` seconds and
an unreachable broker is given up on after ``retry`` reconnection attempts
(oslo.messaging's own default, ``retry=None``, blocks until the broker is
back). Remote ``NoValidHost`` and ``InvalidRequest`` are raised as those
same classes with the server's message, and an unexpected failure inside
the service as ``scheduler.rpc.SchedulerInternalError``. Transport problems
surface as oslo.messaging's exceptions (``MessagingTimeout``,
``MessageDeliveryFailure``, both ``MessagingException``), also when the
broker refuses a new connection.
"""

import threading
import time
import uuid
from typing import Any

import kombu.exceptions
import oslo_messaging
from oslo_config import cfg
from oslo_log import log as logging

from scheduler import exception
from scheduler import rpc
from scheduler.conf import messaging as messaging_conf

LOG = logging.getLogger(__name__)

#: Reconnection attempts before a call gives up on an unreachable broker.
DEFAULT_RETRY = 3

# Checked in this order: the classes are disjoint, and a subclass such as
# InvalidExtraSpec comes back as its documented base class.
_REMOTE_CLASSES: tuple[type[exception.SchedulerError], ...] = (
    exception.NoValidHost, exception.InvalidRequest,
    rpc.SchedulerInternalError)
_REMOTE_NAMES = {"NoValidHost": exception.NoValidHost,
                 "InvalidRequest": exception.InvalidRequest,
                 "InvalidExtraSpec": exception.InvalidRequest,
                 "SchedulerInternalError": rpc.SchedulerInternalError}


def _remote_message(error: BaseException) -> str:
    # oslo.messaging appends the server's traceback to str() of a rebuilt
    # exception; the first constructor argument is the message alone.
    if error.args and isinstance(error.args[0], str):
        return error.args[0]
    return str(error).split("\n", 1)[0]


def translate_remote_error(error: Exception) -> Exception:
    """The documented local exception for ``error`` raised by a call.

    Covers both the classes oslo.messaging rebuilt (as ``<Name>_Remote``
    subclasses whose message carries the server's traceback) and, for a
    transport created without our ``allowed_remote_exmods``, its generic
    ``RemoteError``. Anything else is returned unchanged.
    """
    for cls in _REMOTE_CLASSES:
        if isinstance(error, cls):
            return cls(_remote_message(error))
    if isinstance(error, oslo_messaging.RemoteError):
        cls = _REMOTE_NAMES.get(error.exc_type or "")
        if cls is not None:
            return cls(str(error.value))
    return error


class SchedulerAPI:
    """Calls the scheduler services listening on ``[DEFAULT]
    scheduler_topic``.

    Thread-safe; create one per process and reuse it (each instance that
    owns its transport holds broker connections until ``close``).
    """

    def __init__(self, conf: cfg.ConfigOpts = cfg.CONF,
                 transport: oslo_messaging.Transport | None = None,
                 timeout: float | None = None,
                 retry: int = DEFAULT_RETRY,
                 topic: str | None = None):
        """``timeout`` defaults to ``[DEFAULT] rpc_response_timeout``;
        ``retry`` must be finite (>= 0) so that calls are bounded."""
        messaging_conf.register_messaging_opts(conf)
        if retry is None or retry < 0:
            raise ValueError(
                f"retry must be a finite number of attempts >= 0, got "
                f"{retry!r}: unbounded retries block callers for as long as "
                "the broker is down")
        self.conf = conf
        self.timeout = float(conf.rpc_response_timeout
                             if timeout is None else timeout)
        if self.timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout!r}")
        self.retry = retry
        self._owns_transport = transport is None
        if transport is None:
            transport = oslo_messaging.get_rpc_transport(
                conf, allowed_remote_exmods=rpc.ALLOWED_REMOTE_EXMODS)
        self.transport = transport
        # Each call asks for the version that introduced its method, so
        # that services not yet upgraded keep serving the older ones.
        self.target = oslo_messaging.Target(
            topic=topic or conf.scheduler_topic, version="1.0")
        self._client = oslo_messaging.get_rpc_client(
            transport, self.target, timeout=self.timeout, retry=retry)
        self._broker = rpc.safe_transport_url(conf.transport_url or "")
        self._reply_ready = threading.Event()
        self._reply_lock = threading.Lock()
        self._reply_thread: threading.Thread | None = None

    def select_destinations(self, request_spec: dict,
                            instance_uuids: list[str] | None = None,
                            return_alternates: bool = False,
                            context: dict | None = None
                            ) -> list[list[dict]]:
        """Claim a host per instance; one list per instance, chosen host
        first, then alternates when ``return_alternates``.

        Raises NoValidHost (message: why nothing fits) or InvalidRequest
        (message: the offending field).
        """
        return self._call(context, "select_destinations",
                          request_spec=request_spec,
                          instance_uuids=instance_uuids,
                          return_alternates=return_alternates)

    def explain(self, request_spec: dict,
                context: dict | None = None) -> dict:
        """The decision for one instance without a claim
        (docs/operator-guide.md JSON form: ``selected``, ``summary``,
        ``hosts``)."""
        return self._call(context, "explain", request_spec=request_spec)

    def release(self, instance_uuid: str,
                context: dict | None = None) -> bool:
        """Free the instance's claim; False when it held none."""
        return self._call(context, "release", instance_uuid=instance_uuid)

    def balance(self, cluster: str | None = None, dry_run: bool = False,
                migration_policy: str | None = None,
                context: dict | None = None) -> list[dict]:
        """One balancing tick now, in ``cluster`` (None: every cluster
        whose policy has a balancer); the migrations it planned (at most
        one per cluster), or would plan when ``dry_run``, each to run with
        ``migration_policy`` (default: its cluster's). API 1.1."""
        return self._call(context, "balance", version="1.1",
                          cluster=cluster, dry_run=dry_run,
                          migration_policy=migration_policy)

    def close(self) -> None:
        """Release the broker connections of a transport created here."""
        if self._owns_transport and self._reply_ready.is_set():
            self.transport.cleanup()
        # Otherwise the reply-queue thread may still be connecting; a
        # cleanup now would race it, and the process is the only user.

    def __enter__(self) -> "SchedulerAPI":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, context: dict | None, method: str,
              version: str = "1.0", **kwargs: Any) -> Any:
        ctxt = dict(context or {})
        # Correlates the caller's logs with the service's.
        ctxt.setdefault("request_id", f"req-{uuid.uuid4()}")
        deadline = time.monotonic() + self.timeout
        self._wait_reply_queue(deadline)
        remaining = max(deadline - time.monotonic(), 0.001)
        client = self._client.prepare(timeout=remaining, version=version)
        try:
            return client.call(ctxt, method, **kwargs)
        except kombu.exceptions.OperationalError as e:
            # oslo.messaging wraps a send that fails after its retries,
            # but not the opening of a new pooled connection, which
            # gives up with kombu's own error.
            raise oslo_messaging.MessageDeliveryFailure(
                f"message broker {self._broker} unreachable after "
                f"{self.retry} retries: {e}") from e
        except Exception as e:
            translated = translate_remote_error(e)
            if translated is e:
                raise
            raise translated from None

    def _wait_reply_queue(self, deadline: float) -> None:
        """Bound the first call's connection to the broker.

        The first call on a transport declares its reply queue on a
        connection oslo.messaging opens with unlimited retries, whatever
        ``retry`` the call has: with the broker down it would never return.
        That step runs here in a background thread, so the caller gives up
        at its deadline while the thread keeps trying; later calls wait for
        the same thread instead of each starting one. Transports without
        that step (the fake driver) need nothing.
        """
        if self._reply_ready.is_set():
            return
        driver = getattr(self.transport, "_driver", None)
        declare = getattr(driver, "_get_reply_q", None)
        if declare is None:
            self._reply_ready.set()
            return
        with self._reply_lock:
            if self._reply_thread is None:
                self._reply_thread = threading.Thread(
                    target=self._declare_reply_queue, args=(declare,),
                    name="scheduler-rpc-reply-queue", daemon=True)
                self._reply_thread.start()
        if not self._reply_ready.wait(max(deadline - time.monotonic(), 0)):
            raise oslo_messaging.MessagingTimeout(
                f"message broker {self._broker} not reachable within "
                f"{self.timeout:g} s (still retrying in the background)")

    def _declare_reply_queue(self, declare: Any) -> None:
        try:
            declare()
        except Exception:
            LOG.exception("Could not declare the RPC reply queue on %s",
                          self._broker)
            with self._reply_lock:
                self._reply_thread = None  # the next call tries again
        else:
            self._reply_ready.set()
