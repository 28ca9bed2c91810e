"""/v1/hosts: every compute node as ``scheduler-manage hosts list``
prints it (``scheduler.hosts.records``), with what the console's fleet
page colours and flags; /v1/hosts/{name} as ``hosts show``. Any role
may read them.

The hosts come from one host cache per process, refreshed
incrementally on each request; in a serving ``scheduler-api`` (run
directly or under uWSGI/gunicorn, ``serve_in_background()``) a
background thread does its full loads, the first included, every
``[filter_scheduler] full_refresh_interval`` as in a scheduler worker,
so that no request waits for one. ``metrics_stale`` uses
``[metrics] max_age`` and ``state`` ``[filter_scheduler]
service_down_time``.
"""

import threading

from oslo_config import cfg

from scheduler.api import errors
from scheduler.api import rules
from scheduler.api.router import Context
from scheduler.api.router import Reply
from scheduler.api.router import Router
from scheduler.db import models
from scheduler.hosts import records
from scheduler.hosts.cache.manager import HostManager
from scheduler.hosts.state import HostState

#: The metrics the fleet page shows as colour, by the record key.
SHOWN_METRICS = {"cpu_percent": "cpu.percent",
                 "memory_percent": "memory.percent"}

# One cache per configuration (the app's), holding the ConfigOpts so
# that its id is not reused; built on first use, after any fork.
_MANAGERS: dict[int, tuple[cfg.ConfigOpts, HostManager]] = {}
_MANAGERS_LOCK = threading.Lock()
# The configurations whose caches load in the background, held as
# _MANAGERS holds them.
_BACKGROUND: dict[int, cfg.ConfigOpts] = {}


def serve_in_background(conf: cfg.ConfigOpts) -> None:
    """Have the host cache of ``conf`` do its full loads in a background
    thread (``HostManager.start_background_refresh``), started on first
    use: in the process that serves, after any fork."""
    with _MANAGERS_LOCK:
        _BACKGROUND[id(conf)] = conf


def host_manager(conf: cfg.ConfigOpts) -> HostManager:
    """This process's host cache for ``conf`` (shared with explain)."""
    with _MANAGERS_LOCK:
        held = _MANAGERS.get(id(conf))
        if held is None:
            held = _MANAGERS[id(conf)] = (conf, HostManager(conf))
        background = id(conf) in _BACKGROUND
    if background:
        # A no-op while the thread lives; a forked child starts its own.
        held[1].start_background_refresh()
    return held[1]


def _extra(host: HostState, record: dict, conf: cfg.ConfigOpts) -> dict:
    """The shown metrics' values (None when not reported) and whether
    the metrics are older than ``[metrics] max_age`` (0: never)."""
    for key, name in SHOWN_METRICS.items():
        metric = host.metrics.get(name)
        record[key] = None if metric is None else metric.value
    age, max_age = record["metric_age_s"], conf.metrics.max_age
    record["metrics_stale"] = bool(max_age and age is not None
                                   and age > max_age)
    return record


def list_hosts(ctx: Context) -> Reply:
    ctx.access.authorize(rules.READ)
    hosts = host_manager(ctx.conf).host_states()
    now = models.utcnow()
    down_after = ctx.conf.filter_scheduler.service_down_time
    return Reply({"hosts": [
        _extra(host, records.host_record(host, now, down_after), ctx.conf)
        for host in hosts]})


def show_host(ctx: Context, name: str) -> Reply:
    ctx.access.authorize(rules.READ)
    try:
        host = records.find_host(host_manager(ctx.conf).host_states(), name)
    except LookupError as e:
        raise errors.ApiError(404, e.args[0]) from None
    detail = records.host_detail(host, models.utcnow(),
                                 ctx.conf.filter_scheduler.service_down_time)
    return Reply(_extra(host, detail, ctx.conf))


def register(router: Router) -> None:
    router.add("/v1/hosts", "GET", list_hosts)
    router.add("/v1/hosts/{name}", "GET", show_host)
