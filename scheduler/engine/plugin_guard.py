"""Filters and weighers that raise: contained, counted, logged once.

Filter and weigher plugins are third-party code run on every request.
One bug in one (a ``KeyError`` on a metric only some hosts report) must
not fail every request, so the filter scheduler calls plugins through
this module and applies these rules:

* A filter that raises on a host removes that host (fail closed): its
  reason is ``<Filter> failed: <ExceptionType>`` in the NoValidHost
  histogram and in explain output.
* A weigher that raises on a host gives that host the weigher's worst
  normalised weight among the candidates: the lowest, or the highest
  when the weigher's multiplier is negative, so that the failure never
  ranks the host better.
* A plugin that raises in what concerns the whole request (``applies``,
  ``validate_request``, ``multiplier``, ``unavailable_removes_host``)
  fails that request with ``PluginError`` naming the plugin; an
  ``InvalidRequest`` from ``validate_request`` is the plugin's verdict on
  the request and passes unchanged.
* The column form (``passes``, ``raw_column``) raising, or answering with
  an array of the wrong shape, falls back to the per-host form
  (``rejections``, ``raw_weights``) over all the hosts at once, and that
  one raising to one call per host, so that only the hosts it raises on
  are affected. The usual path pays one try block per plugin and request,
  nothing per host. A plugin that writes only its column form gets its
  per-host form from its base class (the column form over a table of the
  hosts asked), so the same fallback narrows its failure down to the
  hosts it raises on; ``why_rejected`` raising leaves the host removed,
  as ``<Filter> failed``.

Each exception counts in ``scheduler_plugin_errors_total{plugin}``; its
traceback is logged once per plugin and exception type per
``LOG_INTERVAL`` seconds, so a plugin failing on every request does not
flood the log.
"""

import threading
import time
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import numpy as np
from oslo_log import log as logging

from scheduler import exception
from scheduler.common import observability
from scheduler.common.abridge import abridged
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.filters import checked_verdicts
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec
from scheduler.weights import BaseHostWeigher

LOG = logging.getLogger(__name__)

#: Seconds between two tracebacks of one plugin and exception type.
LOG_INTERVAL = 60.0

class PluginError(exception.SchedulerError):
    """A plugin raised on something that concerns the whole request."""

    def __init__(self, plugin: str, method: str, error: BaseException):
        self.plugin = plugin
        self.method = method
        super().__init__(f"plugin {plugin} failed in {method}: "
                         f"{describe(error)}")


def describe(error: BaseException) -> str:
    """``KeyError: 'cpu.percent'``, on one line and bounded: it goes into
    histograms, explain output and one-line errors."""
    text = abridged(" ".join(str(error).split()), 120)
    name = type(error).__name__
    return f"{name}: {text}" if text else name


class _ErrorLog:
    """Counts every plugin exception; logs one traceback per (plugin,
    exception type) per ``interval`` seconds."""

    def __init__(self, interval: float = LOG_INTERVAL,
                 clock: Callable[[], float] = time.monotonic):
        self.interval = interval
        self.clock = clock
        self._lock = threading.Lock()
        self._logged: dict[tuple[str, type], float] = {}

    def report(self, plugin: str, method: str, error: BaseException) -> None:
        observability.metrics().plugin_error(plugin)
        key = (plugin, type(error))
        now = self.clock()
        with self._lock:
            last = self._logged.get(key)
            due = last is None or now - last >= self.interval
            if due:
                self._logged[key] = now
        if due:
            LOG.error(
                "Plugin %s raised %s in %s (request %s); the hosts or "
                "requests concerned fail, the service keeps scheduling "
                "(this traceback is logged once per %g s per plugin and "
                "exception type; scheduler_plugin_errors_total counts each "
                "one)", plugin, type(error).__name__, method,
                observability.request_id.get(), self.interval,
                exc_info=(type(error), error, error.__traceback__))

    def reset(self) -> None:
        with self._lock:
            self._logged.clear()


#: The process's log of plugin errors; every scheduler shares it, as
#: cluster policies share plugin classes.
errors = _ErrorLog()


def hook(plugin: BaseHostFilter | BaseHostWeigher, method: str,
         spec: RequestSpec) -> Any:
    """``plugin.<method>(spec)``; a raising plugin fails the request with
    PluginError (InvalidRequest passes: a request the plugin refuses)."""
    try:
        return getattr(plugin, method)(spec)
    except exception.InvalidRequest:
        raise
    except Exception as e:
        errors.report(plugin.name, method, e)
        raise PluginError(plugin.name, method, e) from None


def _failed(host_filter: BaseHostFilter, error: BaseException
            ) -> Rejection:
    return Rejection(f"{host_filter.name} failed: {type(error).__name__}",
                     describe(error))


def passes(host_filter: BaseHostFilter, table: HostTable,
           spec: RequestSpec) -> np.ndarray | None:
    """The filter's column form; None when it has none, or when it raised
    or answered with something else than one boolean per host (the
    scheduler then asks ``rejections()``)."""
    try:
        verdicts = host_filter.passes(table, spec)
        if verdicts is None:
            return None
        return checked_verdicts(verdicts, len(table))
    except Exception as e:
        errors.report(host_filter.name, "passes", e)
        return None


def rejections(host_filter: BaseHostFilter, hosts: Sequence[HostState],
               spec: RequestSpec) -> list[Rejection | None]:
    """``host_filter.rejections(hosts, spec)``; when it raises, each host
    is asked on its own and those it raises on are rejected as failed."""
    try:
        answers = host_filter.rejections(hosts, spec)
        if len(answers) != len(hosts):
            raise TypeError(f"rejections() returned {len(answers)} "
                            f"verdicts for {len(hosts)} hosts")
        return answers
    except Exception as e:
        errors.report(host_filter.name, "rejections", e)
    found: list[Rejection | None] = []
    for host in hosts:
        try:
            found.append(host_filter.rejections([host], spec)[0])
        except Exception as e:
            errors.report(host_filter.name, "rejections", e)
            found.append(_failed(host_filter, e))
    return found


def explanations(host_filter: BaseHostFilter, hosts: Sequence[HostState],
                 spec: RequestSpec) -> list[Rejection | None]:
    """Why the column form of ``host_filter`` removed each of ``hosts``:
    its per-host form when it writes one (``rejections()``, which may
    disagree: None), else ``why_rejected()`` of each host, without
    judging the hosts again. A host it raises on is reported as failed.
    """
    # A plugin that does not subclass BaseHostFilter (stevedore loads any
    # class) is asked its per-host form, as before the bases derived one.
    if getattr(host_filter, "writes_per_host_form", True):
        return rejections(host_filter, hosts, spec)
    found: list[Rejection | None] = []
    for host in hosts:
        try:
            found.append(host_filter.why_rejected(host, spec))
        except Exception as e:
            errors.report(host_filter.name, "why_rejected", e)
            found.append(_failed(host_filter, e))
    return found


def reasons(host_filter: BaseHostFilter, table: HostTable,
            rows: np.ndarray, spec: RequestSpec) -> Sequence[str] | None:
    """The reasons the column form of ``host_filter`` removed the hosts
    at ``rows`` of ``table`` for, as its ``rejection_reasons()`` reads
    them from the table; None when it reads none, raised, or answered
    with something else than one text per host (``explanations`` then
    asks each host)."""
    # Plugins that do not subclass BaseHostFilter read none.
    if not getattr(host_filter, "reads_reasons", False):
        return None
    try:
        found = host_filter.rejection_reasons(table, rows, spec)
        if found is None:
            return None
        # The types' set, not a test per value: a full fleet of 100,000
        # hosts gives as many reasons.
        if len(found) != len(rows) or not set(map(type, found)) <= {str}:
            raise TypeError(f"rejection_reasons() returned {len(found)} "
                            f"values for {len(rows)} hosts, not one text "
                            "each")
        return found
    except Exception as e:
        errors.report(host_filter.name, "rejection_reasons", e)
        return None


def raw_weights(weigher: BaseHostWeigher, table: HostTable,
                rows: np.ndarray, spec: RequestSpec
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """The weigher's raw weights of the hosts at ``rows`` (NaN where
    unavailable or failed) and where it raised (None: nowhere)."""
    if not len(rows):
        return np.zeros(0), None
    try:
        column = weigher.raw_column(table, rows, spec)
        if column is not None:
            column = np.asarray(column, dtype=float)
            if column.shape != rows.shape:
                raise TypeError(f"raw_column() returned shape "
                                f"{column.shape}, expected {rows.shape}")
            return column, None
    except Exception as e:
        errors.report(weigher.name, "raw_column", e)
    hosts = table.hosts.take(rows.tolist())
    try:
        weights = weigher.raw_weights(hosts, spec)
        if len(weights) != len(hosts):
            raise TypeError(f"raw_weights() returned {len(weights)} "
                            f"weights for {len(hosts)} hosts")
        return _floats(weights), None
    except Exception as e:
        errors.report(weigher.name, "raw_weights", e)
    failed = np.zeros(len(hosts), dtype=bool)
    found: list[float | None] = []
    for i, host in enumerate(hosts):
        try:
            weight = weigher.raw_weights([host], spec)[0]
            found.append(None if weight is None else float(weight))
        except Exception as e:
            errors.report(weigher.name, "raw_weights", e)
            failed[i] = True
            found.append(None)
    return _floats(found), failed


def _floats(weights: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if weight is None else weight
                     for weight in weights], dtype=float)


def worst(normalized: np.ndarray, failed: np.ndarray | None,
          multiplier: float) -> np.ndarray:
    """``normalized`` with the hosts where the weigher failed set to its
    worst value among the others (0.0 when there is none)."""
    if failed is None or not failed.any():
        return normalized
    others = normalized[~failed & ~np.isnan(normalized)]
    if not others.size:
        value = 0.0
    else:
        value = others.max() if multiplier < 0 else others.min()
    return np.where(failed, value, normalized)
