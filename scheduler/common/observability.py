"""Prometheus metrics and the decision log line of scheduler-service.

``metrics()`` is the process's ``Metrics``: the manager, the filter
scheduler, the host manager and the balance planner count into it on
every call, whether or not anything serves it (a counter increment costs
about a microsecond). ``serve()`` starts the HTTP exporter of
``[scheduler] metrics_port`` (0: none) on ``metrics_host``.

With ``[scheduler] workers`` > 1 the forked workers cannot share one
port, so the counters go through prometheus_client's multiprocess mode:
every process writes its values to files in
``<[DEFAULT] state_path>/prometheus/<metrics_port>`` (emptied at start)
and the parent ``scheduler-service`` process serves their sums. The
directory is named after the port because the port is what no two
services on one machine can share.

``DecisionReport`` writes one INFO line per ``select_destinations``
call, ``key=value`` pairs (values with spaces or quotes JSON-quoted)::

    decision request_id=req-1 outcome=placed instances=1 chosen=node-3
    candidates=812/1000 duration_ms=2.1 cluster=c1 policy=power_saving
"""

import contextvars
import functools
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterable
from collections.abc import Mapping

import prometheus_client
from oslo_config import cfg
from oslo_log import log as logging
from prometheus_client import multiprocess
from prometheus_client import values as prometheus_values

from scheduler import exception

LOG = logging.getLogger(__name__)

#: The outcomes of a select_destinations call, as counted and logged.
OUTCOMES = ("placed", "no_valid_host", "invalid_request", "error")

#: Host-cache refresh kinds (``RefreshStats.full``).
REFRESH_KINDS = ("full", "incremental")

#: Seconds. A decision over 1,000 hosts takes about 2 ms, one over
#: 10,000 about 20 ms; waits for locks and pending claims reach seconds.
DECISION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                    0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
REFRESH_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                   0.25, 0.5, 1.0, 2.5, 5.0)

#: ManagerStats fields exported as counters, with their help text. The
#: others (requests, no_valid_host) are the decision counter's outcomes.
MANAGER_COUNTERS = {
    "claims": ("scheduler_claims",
               "Claims made, one per instance placed."),
    "idempotent": ("scheduler_claims_reused",
                   "Instances answered with the claim they already held."),
    "conflicts": ("scheduler_claim_conflicts",
                  "Claims refused because a concurrent scheduler filled "
                  "the node first; the next candidate was tried."),
    "redecisions": ("scheduler_claim_redecisions",
                    "Decisions made again because every candidate of the "
                    "previous one was taken (claim retries)."),
    "rolled_back": ("scheduler_claims_rolled_back",
                    "Claims released because a later instance of their "
                    "request failed."),
    "pending_waits": ("scheduler_pending_claim_waits",
                      "Retries of a request that fitted nowhere while "
                      "pending claims existed ([scheduler] "
                      "pending_retry_timeout)."),
}

#: The caller's request id, set by the RPC endpoint around each call.
request_id: contextvars.ContextVar[str] = contextvars.ContextVar(
    "request_id", default="-")


class Metrics:
    """The scheduler's Prometheus metrics, registered in ``registry``.

    Label values that are known up front are created here, so that every
    series exists (at 0) from the start and ``rate()`` sees the first
    event.
    """

    def __init__(self, registry: prometheus_client.CollectorRegistry
                 = prometheus_client.REGISTRY):
        decisions = prometheus_client.Counter(
            "scheduler_decisions",
            "select_destinations calls by outcome: placed, no_valid_host, "
            "invalid_request, error.", ["outcome"], registry=registry)
        seconds = prometheus_client.Histogram(
            "scheduler_decision_duration_seconds",
            "Duration of select_destinations calls (validation, host-cache "
            "refresh, decision and claims), by outcome.", ["outcome"],
            buckets=DECISION_BUCKETS, registry=registry)
        self._decisions = {outcome: decisions.labels(outcome)
                           for outcome in OUTCOMES}
        self._decision_seconds = {outcome: seconds.labels(outcome)
                                  for outcome in OUTCOMES}
        self.hosts_removed = prometheus_client.Counter(
            "scheduler_filter_removed_hosts",
            "Hosts removed from decisions, by the filter (or the weigher "
            "of a required metric) that removed them.", ["filter"],
            registry=registry)
        self._removed: dict[str, prometheus_client.Counter] = {}
        refresh_seconds = prometheus_client.Histogram(
            "scheduler_host_refresh_duration_seconds",
            "Duration of host-cache refreshes, full or incremental.",
            ["kind"], buckets=REFRESH_BUCKETS, registry=registry)
        refresh_rows = prometheus_client.Counter(
            "scheduler_host_refresh_rows",
            "compute_nodes rows read in full by host-cache refreshes "
            "(every row for a full one, the changed ones otherwise).",
            ["kind"], registry=registry)
        self._refresh_seconds = {kind: refresh_seconds.labels(kind)
                                 for kind in REFRESH_KINDS}
        self._refresh_rows = {kind: refresh_rows.labels(kind)
                              for kind in REFRESH_KINDS}
        #: ManagerStats field -> its counter.
        self.manager_counters = {
            field: prometheus_client.Counter(name, text, registry=registry)
            for field, (name, text) in MANAGER_COUNTERS.items()}
        self.migrations_planned = prometheus_client.Counter(
            "scheduler_migrations_planned",
            "Migrations planned by the balancer (not dry runs), by cluster "
            "('-' for hosts without one) and cluster policy.",
            ["cluster", "policy"], registry=registry)
        self.plugin_errors = prometheus_client.Counter(
            "scheduler_plugin_errors",
            "Exceptions raised by filter and weigher plugins, by plugin "
            "name (scheduler.engine.plugin_guard: the host or request "
            "concerned is failed, never the service).", ["plugin"],
            registry=registry)
        self._plugin_errors: dict[str, prometheus_client.Counter] = {}
        self._lock = threading.Lock()

    def decision(self, outcome: str, seconds: float) -> None:
        self._decisions[outcome].inc()
        self._decision_seconds[outcome].observe(seconds)

    def removed(self, counts: Mapping[str, int]) -> None:
        """Count the hosts one decision removed, by filter name."""
        for name, count in counts.items():
            self._child(self.hosts_removed, self._removed, name).inc(count)

    def plugin_error(self, plugin: str) -> None:
        """Count one exception raised by plugin ``plugin``."""
        self._child(self.plugin_errors, self._plugin_errors, plugin).inc()

    def _child(self, counter: prometheus_client.Counter,
               children: dict[str, prometheus_client.Counter],
               label: str) -> prometheus_client.Counter:
        # labels() takes a lock and builds a key: cached per label value,
        # as these counters move on every decision.
        child = children.get(label)
        if child is None:
            with self._lock:
                child = children.setdefault(label, counter.labels(label))
        return child

    def refreshed(self, full: bool, seconds: float, rows: int) -> None:
        kind = REFRESH_KINDS[0] if full else REFRESH_KINDS[1]
        self._refresh_seconds[kind].observe(seconds)
        self._refresh_rows[kind].inc(rows)

    def planned(self, cluster: str | None, policy: str) -> None:
        self.migrations_planned.labels(cluster or "-", policy).inc()


@functools.cache
def metrics() -> Metrics:
    """The metrics of this process, in prometheus_client's default
    registry; built on first use (after ``serve()`` chose the mode)."""
    return Metrics()


# The decision log line


# What would split a value or make it ambiguous to a parser.
_NEEDS_QUOTES = re.compile(r'[\s"=]')


def _value(value: object) -> str:
    text = "-" if value is None else str(value)
    if not text or _NEEDS_QUOTES.search(text):
        return json.dumps(text)
    return text


def logfmt(pairs: Iterable[tuple[str, object]]) -> str:
    """``key=value`` pairs separated by spaces; None is ``-``, values
    with spaces, quotes or ``=`` are JSON strings."""
    return " ".join(f"{key}={_value(value)}" for key, value in pairs)


class DecisionReport:
    """Times one select_destinations call, then logs its decision line and
    counts it (``finish``, ``failed``): the RPC endpoint's, once per call.
    The manager fills in what it learns on the way: instances, cluster
    and policy after validation, candidates and hosts after each decision
    (the line shows the last one)."""

    def __init__(self) -> None:
        self.request_id = request_id.get()
        self.started = time.perf_counter()
        self.instances: int | None = None
        self.cluster: str | None = None
        self.policy: str | None = None
        self.candidates: int | None = None
        self.hosts: int | None = None

    def finish(self, outcome: str, chosen: Iterable[str] = (),
               detail: tuple[str, str] | None = None) -> None:
        """Count and log the call. ``detail`` is a last (key, text) pair:
        the NoValidHost summary or the error."""
        seconds = time.perf_counter() - self.started
        metrics().decision(outcome, seconds)
        if not LOG.isEnabledFor(logging.INFO):
            return
        candidates = (None if self.hosts is None
                      else f"{self.candidates}/{self.hosts}")
        pairs = [("request_id", self.request_id), ("outcome", outcome),
                 ("instances", self.instances),
                 ("chosen", ",".join(chosen) or None),
                 ("candidates", candidates),
                 ("duration_ms", f"{seconds * 1000:.1f}"),
                 ("cluster", self.cluster), ("policy", self.policy)]
        if detail is not None:
            pairs.append(detail)
        LOG.info("decision %s", logfmt(pairs))

    def failed(self, error: BaseException) -> None:
        """``finish`` for a call that raised ``error``: no_valid_host
        with the filter histogram, invalid_request, else error."""
        if isinstance(error, exception.NoValidHost):
            self.finish("no_valid_host", detail=("summary", str(error)))
        elif isinstance(error, exception.InvalidRequest):
            self.finish("invalid_request", detail=("error", str(error)))
        else:
            # A driver's error keeps its own message in ``orig``.
            cause = getattr(error, "orig", None) or error
            text = " ".join(str(cause).split())
            self.finish("error", detail=(
                "error", f"{type(error).__name__}: {text}"))


# The exporter


def multiprocess_directory(conf: cfg.ConfigOpts) -> str:
    """Where the workers of a service write their metric values."""
    return os.path.join(conf.state_path, "prometheus",
                        str(conf.scheduler.metrics_port))


def _use_multiprocess(conf: cfg.ConfigOpts) -> str:
    """Empty the workers' directory and switch prometheus_client to its
    multiprocess mode; returns the directory."""
    directory = multiprocess_directory(conf)
    try:
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
    except OSError as e:
        raise exception.ConfigError(
            "DEFAULT", "state_path", conf.state_path,
            f"cannot create {directory} for the workers' metrics "
            f"({e.strerror or e}); expected a writable directory") from None
    # prometheus_client picks its value class from the environment when
    # it is imported; the configuration is read later, so the choice is
    # made again here, before the first metric exists.
    if metrics.cache_info().currsize:
        raise RuntimeError("metrics were created before the multiprocess "
                           "mode was chosen")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    prometheus_values.ValueClass = prometheus_values.get_value_class()
    return directory


def serve(conf: cfg.ConfigOpts, workers: int
          ) -> prometheus_client.exposition.WSGIServer | None:
    """Serve ``/metrics`` on ``[scheduler] metrics_host:metrics_port``
    from a daemon thread of this process; None when the port is 0.

    With ``workers`` > 1, call it in the parent before any worker is
    forked and before the first metric is counted. A port that cannot be
    bound is a ConfigError.
    """
    opts = conf.scheduler
    if not opts.metrics_port:
        return None
    if workers > 1:
        registry = prometheus_client.CollectorRegistry()
    else:
        registry = prometheus_client.REGISTRY
    try:
        server, _thread = prometheus_client.start_http_server(
            opts.metrics_port, addr=opts.metrics_host, registry=registry)
    except OSError as e:
        raise exception.ConfigError(
            "scheduler", "metrics_port", opts.metrics_port,
            f"cannot listen on {opts.metrics_host}:{opts.metrics_port} "
            f"({e.strerror or e}); expected a free port") from None
    if workers > 1:
        # Only once the port is ours: a service already serving it owns
        # the directory named after it.
        try:
            directory = _use_multiprocess(conf)
        except BaseException:
            server.shutdown()
            server.server_close()
            raise
        multiprocess.MultiProcessCollector(registry, path=directory)
    LOG.info("Serving Prometheus metrics on http://%s:%d/metrics%s",
             opts.metrics_host, opts.metrics_port,
             f" (the sums of {workers} workers)" if workers > 1 else "")
    return server
