"""The RPC endpoint ``scheduler-service`` serves (docs/architecture.md).

``SchedulerEndpoint`` checks what arrives from the wire, delegates to a
``SchedulerManager`` and turns every outcome into one of three things the
caller can rely on: a JSON-safe result, ``InvalidRequest`` /
``NoValidHost`` (rebuilt as the same classes by ``SchedulerAPI``), or
``SchedulerInternalError`` for anything unexpected, whose traceback stays in
this service's log. No exception escapes into oslo.messaging as anything
else, so a bug in one request never takes the server down and never leaks
an arbitrary class to API nodes.

The process that serves it is ``scheduler.rpc.server``.
"""

import re
import time
from collections.abc import Callable
from typing import Any
from typing import Protocol

import oslo_messaging
from oslo_log import log as logging

from scheduler import exception
from scheduler import rpc
from scheduler.common import observability
from scheduler.common.abridge import short
from scheduler.request import values as request_values
from scheduler.rpc import arguments

LOG = logging.getLogger(__name__)

#: The NoValidHost reason of MetricsWeigher for a host missing a metric.
METRIC_UNAVAILABLE = "required metric unavailable: "
#: Seconds between two checks of ``[metrics] weight_setting`` against the
#: fleet after requests failed for a metric: each check reads every host,
#: and a misspelt metric fails every request.
UNREPORTED_CHECK_INTERVAL = 60.0


class Notifier(Protocol):
    """What the service needs of ``notifications.BackgroundNotifier`` and
    ``notification_process.ProcessNotifier``."""

    def info(self, ctxt: dict, event_type: str, payload: dict) -> None: ...

    def stop(self, timeout: float = 5.0) -> None: ...


class Manager(Protocol):
    """What the endpoint needs of ``scheduler.manager.SchedulerManager``."""

    def select_destinations(
            self, request_spec: dict, instance_uuids: list[str] | None = None,
            return_alternates: bool = False,
            report: observability.DecisionReport | None = None
            ) -> list[list[dict]]: ...

    def explain(self, request_spec: dict) -> dict: ...

    def release(self, instance_uuid: str) -> bool: ...

    def balance(self, cluster: str | None, dry_run: bool,
                migration_policy: str | None) -> list[dict]: ...

    def resume_releases(self) -> int: ...

    def unreported_weight_metrics(self) -> list[tuple[str, str]]: ...


def _wrong_type(name: str, value: object, expected: str
                ) -> exception.InvalidRequest:
    # Worded like the manager's schema errors, bounded whatever the size
    # of the value.
    shown = short(value, 80)
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


#: What request ids look like (oslo.context's ``req-<uuid>``, Nova's,
#: a tracing id): shown as they are.
_PLAIN_ID = re.compile(r"[A-Za-z0-9._:@/+-]{1,80}")


def request_id(ctxt: object) -> str:
    """The caller's request id, for log lines and error messages.

    Sent by the client: anything else than a plain id of at most 80
    characters is shown abbreviated and quoted, so that a 100 KB id or
    one with a newline cannot flood or forge log lines."""
    if isinstance(ctxt, dict) and ctxt.get("request_id"):
        value = ctxt["request_id"]
        if isinstance(value, str) and _PLAIN_ID.fullmatch(value):
            return value
        return short(value)
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
        self._metrics_checked_at: float | None = None

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
        # The decision line of every outcome: this endpoint's, counted and
        # logged once; the manager fills the report in on the way.
        report = observability.DecisionReport()
        try:
            spec = check_request_spec(request_spec)
            alternates = check_bool(return_alternates, "return_alternates")
        except exception.InvalidRequest as e:
            report.failed(e)
            raise
        uuids = instance_uuids
        self._notify(ctxt, rpc.SELECT_START, {
            "request_spec": spec, "instance_uuids": uuids,
            "return_alternates": alternates})
        outcome: dict[str, Any] = {"instance_uuids": uuids,
                                   "selections": None, "error": None}
        try:
            selections = self.manager.select_destinations(spec, uuids,
                                                          alternates, report)
            report.finish("placed", chosen=[str(entries[0]["host"])
                                            for entries in selections])
            outcome["selections"] = selections
            return selections
        except Exception as e:
            report.failed(e)
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

    def _warn_unreported_metrics(self, method: str, rid: str) -> None:
        # A misspelt weight_setting fails every request under [metrics]
        # required = true: said where the operator looks for the failure,
        # as at start-up, at most once a UNREPORTED_CHECK_INTERVAL.
        now = time.monotonic()
        if (self._metrics_checked_at is not None and now
                - self._metrics_checked_at < UNREPORTED_CHECK_INTERVAL):
            return
        self._metrics_checked_at = now
        try:
            unreported = self.manager.unreported_weight_metrics()
        except Exception as e:
            # Only a hint: the request's own error is what the caller gets.
            LOG.debug("weight_setting metrics not checked: %s", e)
            return
        for _name, why in unreported:
            LOG.warning("%s (request %s) failed for [metrics] "
                        "weight_setting: %s", method, rid, why)

    def _notify(self, ctxt: dict, event_type: str, payload: dict) -> None:
        if self.notifier is None:
            return
        # Queued: sent after the reply, whatever state the bus is in.
        self.notifier.info(ctxt, event_type, payload)

    def _guard(self, method: str, ctxt: dict, func: Callable[..., Any],
               *args: object) -> Any:
        rid = request_id(ctxt)
        token = observability.request_id.set(rid)
        try:
            return self._call(method, rid, func, *args)
        finally:
            observability.request_id.reset(token)

    def _call(self, method: str, rid: str, func: Callable[..., Any],
              *args: object) -> Any:
        started = time.monotonic()
        # select_destinations' decision line (INFO, every outcome, written
        # by _select) carries the request id and supersedes the INFO
        # lines below for that method.
        logged = method == "select_destinations"
        no_valid_host = None
        try:
            result = func(*args)
        # Rebuilt as the base classes: a subclass such as InvalidExtraSpec
        # takes several constructor arguments, and the client can only
        # rebuild an exception from its single message.
        except exception.NoValidHost as e:
            if not logged:
                LOG.info("%s (request %s): no valid host: %s", method, rid,
                         e)
            # Raised below: oslo.log would append it to a WARNING logged
            # in this block.
            no_valid_host = exception.NoValidHost(str(e))
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
        if no_valid_host is not None:
            if METRIC_UNAVAILABLE in str(no_valid_host):
                self._warn_unreported_metrics(method, rid)
            raise no_valid_host
        elapsed_ms = (time.monotonic() - started) * 1000
        if method == "select_destinations":
            LOG.debug("%s (request %s) in %.1f ms: %s", method, rid,
                      elapsed_ms, _selection_summary(result))
        else:
            LOG.debug("%s (request %s) in %.1f ms", method, rid, elapsed_ms)
        return result

