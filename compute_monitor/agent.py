"""The compute monitor agent: measure the node, keep its row up to date.

Each cycle runs every monitor plugin in its own thread with the cycle's
deadline, validates what they return, and writes the metrics list, the
measured usage and the heartbeat into the node's ``compute_nodes`` row.
A plugin that raises, hangs or returns garbage only loses its own
entries; a database outage is logged and retried with backoff.
"""

import datetime
import importlib.metadata
import json
import math
import platform
import threading
import time
from collections.abc import Callable

import psutil
import sqlalchemy as sa
from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc
from stevedore import named

from compute_monitor import base
from compute_monitor import conf as monitor_conf
from scheduler import exception
from scheduler.common import suggest
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import node_sql
from scheduler.db import schema

LOG = logging.getLogger(__name__)

MONITOR_NAMESPACE = "compute_monitor.monitors"
MIB = 1024 * 1024
GIB = 1024 * MIB


def _did_you_mean(names: list[str], available: list[str]) -> str:
    if len(names) == 1:
        return suggest.did_you_mean(names[0], available)
    return "".join(f"; did you mean {match!r} for {name!r}?"
                   for name in names
                   if (match := suggest.closest(name, available)) not in
                   (None, name))


def load_monitors(conf: cfg.ConfigOpts
                  ) -> list[tuple[str, base.ResourceMonitorPluginBase]]:
    """Instantiate the plugins named in ``[compute_monitor] monitors``.

    Raises one ConfigError naming every unknown or unloadable plugin.
    """
    names = list(dict.fromkeys(conf.compute_monitor.monitors))
    bad: list[str] = []
    problems: list[str] = []

    def missing(missing_names):
        # stevedore counts a monitor that failed to load as missing too.
        unknown = [name for name in names
                   if name in missing_names and name not in bad]
        if not unknown:
            return
        available = sorted(importlib.metadata.entry_points(
            group=MONITOR_NAMESPACE).names)
        bad.extend(unknown)
        problems.append(f"expected entry points of {MONITOR_NAMESPACE}: "
                        f"{', '.join(available)}"
                        + _did_you_mean(unknown, available))

    def failed(_manager, entrypoint, error):
        bad.append(entrypoint.name)
        problems.append(f"monitor {entrypoint.name} failed to load: {error}")

    manager = named.NamedExtensionManager(
        MONITOR_NAMESPACE, names, invoke_on_load=True, invoke_args=(conf,),
        name_order=True, on_missing_entrypoints_callback=missing,
        on_load_failure_callback=failed)
    if problems:
        raise exception.ConfigError("compute_monitor", "monitors",
                                    ",".join(bad), "; ".join(problems))
    monitors = []
    for extension in manager:
        if not extension.obj.source:
            extension.obj.source = extension.name
        monitors.append((extension.name, extension.obj))
    return monitors


def _invalid_reason(entry) -> str | None:
    """Why a metric entry cannot be stored, or None when it is fine."""
    if not isinstance(entry, dict):
        return f"entry {entry!r} is not an object"
    missing = [k for k in ("name", "value", "timestamp") if k not in entry]
    if missing:
        return f"missing key(s) {', '.join(missing)}"
    name, value = entry["name"], entry["value"]
    if not isinstance(name, str) or not base.METRIC_NAME_RE.match(name):
        return f"name {name!r} is not dotted lower case"
    # docs/operator-guide.md: instance.* entries measure one instance, keyed by
    # its uuid; the scheduler keeps them apart from the host's metrics.
    instance = entry.get("instance")
    if "instance" in entry and (not isinstance(instance, str)
                                or not instance.strip()):
        return f"instance {instance!r} is not an instance uuid"
    if (instance is None) != (not name.startswith(base.INSTANCE_PREFIX)):
        return (f"{base.INSTANCE_PREFIX}* names need an instance key, "
                "other names none")
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value)):
        return f"value {value!r} is not a finite number"
    try:
        datetime.datetime.fromisoformat(str(entry["timestamp"]))
    except ValueError:
        return f"timestamp {entry['timestamp']!r} is not ISO-8601"
    return None


class _PluginCall:
    """One get_metrics() call on a daemon thread, so a hung plugin can be
    abandoned without blocking the agent or its exit."""

    def __init__(self, plugin: base.ResourceMonitorPluginBase):
        self.started = time.monotonic()
        self.result: list | None = None
        self.error: BaseException | None = None
        self._done = threading.Event()
        threading.Thread(target=self._run, args=(plugin,), daemon=True,
                         name=f"monitor-{plugin.source}").start()

    def _run(self, plugin: base.ResourceMonitorPluginBase) -> None:
        try:
            self.result = plugin.get_metrics()
        except Exception as e:  # a broken plugin must not stop the others
            self.error = e
        finally:
            self._done.set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(max(timeout, 0))


class Backoff:
    """Exponential waits between attempts: 1, 2, 4, ... up to a bound.

    Not tenacity: ``run_forever`` never gives up and sleeps between
    cycles whether they failed or not, the failed ones for longer, each
    wait ending as soon as ``stop()`` is called; a retry loop around one
    call fits none of that.
    """

    def __init__(self, maximum: float):
        self.maximum = maximum
        self._next = 1.0

    def next(self) -> float:
        delay = self._next
        self._next = min(self._next * 2, self.maximum)
        return delay

    def reset(self) -> None:
        self._next = 1.0


class MonitorAgent:
    """Registers this node and reports its metrics every interval."""

    def __init__(self, conf: cfg.ConfigOpts,
                 monitors: list[tuple[str, base.ResourceMonitorPluginBase]]):
        self.conf = conf
        self.monitors = monitors
        self.node_id: int | None = None
        self._running: dict[str, _PluginCall] = {}
        self._stop = threading.Event()
        self._backoff = Backoff(conf.database.max_retry_interval)

    @property
    def hostname(self) -> str:
        return monitor_conf.hypervisor_hostname(self.conf)

    # Measuring

    def collect(self) -> list[dict]:
        """Run every plugin once and return the valid, de-duplicated
        entries, first plugin in ``monitors`` order winning a name."""
        self._forget_finished_calls()
        deadline = time.monotonic() + self.conf.compute_monitor.interval
        calls = {}
        for name, plugin in self.monitors:
            previous = self._running.get(name)
            if previous is not None:
                LOG.warning("Monitor %s is still running after %.1f s; "
                            "skipping it this cycle", name,
                            time.monotonic() - previous.started)
                continue
            calls[name] = _PluginCall(plugin)
        metrics: list[dict] = []
        owners: dict[str, str] = {}
        for name, call in calls.items():
            if not call.wait(deadline - time.monotonic()):
                LOG.warning("Monitor %s did not return within the %d s "
                            "interval; its metrics are left out", name,
                            self.conf.compute_monitor.interval)
                self._running[name] = call
                continue
            metrics.extend(self._accept(name, call, owners))
        return metrics

    def _accept(self, plugin_name: str, call: _PluginCall,
                owners: dict[str, str]) -> list[dict]:
        if call.error is not None:
            LOG.error("Monitor %s failed: %s: %s", plugin_name,
                      type(call.error).__name__, call.error)
            return []
        if not isinstance(call.result, list):
            LOG.error("Monitor %s returned %s instead of a list of metrics",
                      plugin_name, type(call.result).__name__)
            return []
        accepted = []
        for entry in call.result:
            reason = _invalid_reason(entry)
            metric = entry.get("name") if isinstance(entry, dict) else None
            if reason:
                LOG.warning("Dropped metric %r from monitor %s: %s", metric,
                            plugin_name, reason)
                continue
            instance = entry.get("instance")
            # Every instance reports the same names: one per instance.
            key = metric if instance is None else f"{metric} of {instance}"
            if key in owners:
                LOG.warning("Metric %s is reported by monitors %s and %s; "
                            "keeping the value from %s", key,
                            owners[key], plugin_name, owners[key])
                continue
            owners[key] = plugin_name
            kept = {"name": metric, "value": entry["value"],
                    "source": str(entry.get("source") or plugin_name),
                    "timestamp": str(entry["timestamp"])}
            if instance is not None:
                kept["instance"] = instance
            accepted.append(kept)
        return accepted

    def _forget_finished_calls(self) -> None:
        for name, call in list(self._running.items()):
            if call.wait(0):
                del self._running[name]
                if call.error is not None:
                    LOG.error("Monitor %s failed after its deadline: %s",
                              name, call.error)

    # Node identity and capacity

    def _cpu_info(self) -> dict:
        info: dict = {"arch": platform.machine(),
                      "topology": {
                          "cores": psutil.cpu_count(logical=False) or 0,
                          "threads": psutil.cpu_count(logical=True) or 0}}
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                fields = dict(line.split(":", 1) for line in f
                              if ":" in line)
        except OSError:
            fields = {}
        wanted = {"model name": "model", "vendor_id": "vendor",
                  "flags": "features"}
        for key, value in fields.items():
            target = wanted.get(key.strip())
            if target == "features":
                info[target] = sorted(value.split())
            elif target:
                info[target] = value.strip()
        info.update(self.conf.compute_monitor.cpu_info)
        return info

    def node_capacity(self) -> dict:
        """The node's identity and capacity: psutil, then config overrides."""
        opts = self.conf.compute_monitor
        disk = psutil.disk_usage(opts.instances_path)
        return {
            "host": self.conf.host,
            "hypervisor_hostname": self.hostname,
            "cluster": opts.cluster,
            "availability_zone": opts.availability_zone,
            "vcpus": opts.vcpus or psutil.cpu_count(logical=True) or 1,
            "memory_mb": (opts.memory_mb
                          or psutil.virtual_memory().total // MIB),
            "local_gb": (opts.local_gb if opts.local_gb is not None
                         else disk.total // GIB),
            "cpu_allocation_ratio": opts.cpu_allocation_ratio,
            "ram_allocation_ratio": opts.ram_allocation_ratio,
            "disk_allocation_ratio": opts.disk_allocation_ratio,
            "cpu_info": json.dumps(self._cpu_info(), sort_keys=True),
            "networks": json.dumps(list(opts.networks)),
        }

    def measured_usage(self) -> dict:
        memory = psutil.virtual_memory()
        disk = psutil.disk_usage(self.conf.compute_monitor.instances_path)
        return {"memory_mb_used": (memory.total - memory.available) // MIB,
                "local_gb_used": disk.used // GIB}

    # Database

    def _engine(self) -> sa.Engine:
        return db_api.get_engine(self.conf)

    def check_schema(self) -> None:
        problem = schema.schema_problem(self.conf, "this agent")
        if problem is not None:
            raise exception.SchedulerError(problem)

    def register(self) -> int:
        """Create or update this node's row; returns its id."""
        self.check_schema()
        values = self.node_capacity()
        with self._engine().begin() as connection:
            node_id, created = node_sql.register_node(
                connection, values, models.utcnow())
        if created:
            LOG.info("Registered node %s (%s)", self.hostname, node_id)
        self.node_id = node_id
        return node_id

    def write_report(self, metrics: list[dict]) -> None:
        now = models.utcnow()
        with self._engine().begin() as connection:
            updated = node_sql.write_report(
                connection, self.node_id, metrics, self.measured_usage(),
                now)
        if not updated:
            LOG.warning("Node %s vanished from compute_nodes; registering "
                        "it again", self.hostname)
            self.register()
            self.write_report(metrics)

    def node_row(self) -> dict:
        """This node's row as stored, JSON columns decoded."""
        with self._engine().connect() as connection:
            return node_sql.node_row(connection, self.node_id)

    # Running

    def run_cycle(self) -> int:
        """Register if needed, measure, write. Returns metrics written."""
        if self.node_id is None:
            self.register()
        metrics = self.collect()
        self.write_report(metrics)
        LOG.debug("Wrote %d metrics for %s", len(metrics), self.hostname)
        return len(metrics)

    def run_forever(self, sleep: Callable[[float], bool] | None = None
                    ) -> None:
        """Cycle every interval until stop(); never dies on DB errors."""
        wait = sleep or self._stop.wait
        interval = self.conf.compute_monitor.interval
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.run_cycle()
                failure = None
            except (sa_exc.SQLAlchemyError, exception.SchedulerError) as e:
                failure = e
            # Logged outside the except block: oslo.log would append the
            # exception's text to a WARNING logged in it, a second time.
            if failure is None:
                self._backoff.reset()
                delay = interval - (time.monotonic() - started)
            else:
                delay = self._backoff.next()
                self._log_failure(failure, delay)
            wait(max(delay, 0))

    def _log_failure(self, error: Exception, delay: float) -> None:
        if not isinstance(error, sa_exc.SQLAlchemyError):
            LOG.error("%s; retrying in %.0f s", error, delay)
            return
        where = db_api.safe_url(self.conf.database.connection)
        detail = db_api.one_line(error)
        if db_api.is_retriable(error):
            LOG.warning("Database %s unreachable (%s); retrying in %.0f s",
                        where, detail, delay)
        else:
            LOG.error("Database %s rejected the report (%s: %s); retrying "
                      "in %.0f s", where, type(error).__name__, detail,
                      delay)

    def stop(self) -> None:
        self._stop.set()
