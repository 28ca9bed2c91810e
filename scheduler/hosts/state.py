"""Host states: what the scheduler knows about each compute node, as
filters, weighers and balancers see it (the plugin API).

A ``HostState`` is built by the host cache (``scheduler.hosts.cache``) from
a ``compute_nodes`` row plus the claims (allocations) on that node. Free
resources are capacity x allocation ratio minus claimed resources.
Metrics keep their timestamps; a metric older than ``[metrics] max_age``
is unavailable. Claims made after the node's last metrics report are
*pending*: they are not in the reported metrics yet, so the
resource-linked metrics are adjusted for them until the next report
arrives. Nothing here touches the database.
"""

import dataclasses
import datetime
import math
from collections.abc import Iterable
from collections.abc import Mapping
from typing import NamedTuple

import msgspec
from oslo_config import cfg

from scheduler.common import clock
from scheduler.conf import metric_stat
from scheduler.hosts import history as history_mod
from scheduler.request.spec import RequestSpec

MIB = 1024 * 1024

# Metrics that move when an instance lands on the node, and how.
_MEMORY_DOWN = ("memory.free", "memory.available")
_MEMORY_UP = ("memory.used",)


class Metric(msgspec.Struct, frozen=True, gc=False):
    """One reported measurement of a node: its value, when it was
    measured (naive UTC) and what measured it.

    A msgspec struct, not a dataclass: a cache of 100,000 hosts holds two
    million of these, which the garbage collector then walked at every
    full collection (a pause of seconds); holding no reference that could
    form a cycle, they are left out of its tracking. Built in a third of
    a frozen dataclass's time, too.
    """

    value: float
    timestamp: datetime.datetime
    source: str = ""


@dataclasses.dataclass
class HostState:
    """One compute node as seen by filters and weighers."""

    node_id: int
    uuid: str
    host: str
    nodename: str
    cluster: str | None = None
    availability_zone: str | None = None
    vcpus: int = 0
    memory_mb: int = 0
    disk_gb: int = 0
    cpu_allocation_ratio: float = 1.0
    ram_allocation_ratio: float = 1.0
    disk_allocation_ratio: float = 1.0
    vcpus_claimed: int = 0
    memory_mb_claimed: int = 0
    disk_gb_claimed: int = 0
    #: Claims newer than the last metrics report (not yet in metrics):
    #: how many, and what they hold.
    claims_pending: int = 0
    vcpus_pending: int = 0
    memory_mb_pending: int = 0
    cpu_info: dict = dataclasses.field(default_factory=dict)
    networks: frozenset[str] = frozenset()
    #: Valid metrics of the last report, by name. Read-only: the host
    #: cache's is a view over the report's columns
    #: (``scheduler.hosts.reported``), any mapping does elsewhere.
    metrics: Mapping[str, Metric] = dataclasses.field(default_factory=dict)
    #: Names of reported metrics that were malformed (not numbers).
    bad_metrics: frozenset[str] = frozenset()
    #: Valid instance entries of the last report (docs/operator-guide.md),
    #: by instance uuid and name; read through
    #: ``scheduler.hosts.instance_metrics``, never by host filters and
    #: weighers.
    instance_metrics: Mapping[str, Mapping[str, Metric]] = \
        dataclasses.field(default_factory=dict)
    #: The node's reports over the last ``[metrics] history_window``
    #: (``scheduler.hosts.history``), read-only: what windowed
    #: statistics (``cpu.percent:mean:1h``) are computed from.
    metric_history: history_mod.MetricHistory = history_mod.EMPTY
    #: Each instance's instance.cpu.percent reports by instance uuid,
    #: over ``[metrics] instance_history_window`` (empty when 0);
    #: read through ``scheduler.hosts.instance_metrics``. Read-only.
    instance_history: history_mod.MetricHistory = history_mod.EMPTY
    disabled: bool = False
    disabled_reason: str | None = None
    updated_at: datetime.datetime | None = None
    metrics_updated_at: datetime.datetime | None = None
    generation: int = 0
    changed_at: datetime.datetime | None = None
    instances: set[str] = dataclasses.field(default_factory=set)
    #: Server groups with at least one instance on this host.
    instance_groups: set[str] = dataclasses.field(default_factory=set)
    #: The flavor key (vCPUs, MiB) of each claimed instance, from its
    #: claim: what ``[metrics] expected_instance_cpu = measured`` groups
    #: instances by (claims carry no flavor name). Read-only.
    instance_flavors: Mapping[str, tuple[int, int]] = \
        dataclasses.field(default_factory=dict)
    #: Share of a pending claim's vCPUs assumed busy until the next
    #: report (``[metrics] expected_instance_cpu``; 1.0: all of them).
    pending_cpu_fraction: float = 1.0

    @property
    def free_vcpus(self) -> float:
        return self.vcpus * self.cpu_allocation_ratio - self.vcpus_claimed

    @property
    def free_ram_mb(self) -> float:
        return self.memory_mb * self.ram_allocation_ratio - \
            self.memory_mb_claimed

    @property
    def free_disk_gb(self) -> float:
        # local_disk_limit_gb - claimed, without a second property call:
        # filters and weighers read this for every host.
        return self.disk_gb * self.disk_allocation_ratio - \
            self.disk_gb_claimed

    @property
    def local_disk_limit_gb(self) -> float:
        return self.disk_gb * self.disk_allocation_ratio

    @property
    def num_instances(self) -> int:
        return len(self.instances)

    def metric(self, name: str, now: datetime.datetime,
               max_age: float) -> float | None:
        """The metric's value adjusted for pending claims, or None when
        it is missing, malformed or older than ``max_age`` seconds
        (``max_age`` <= 0 disables the age check)."""
        return self.metric_since(name, stale_before(now, max_age))

    def metric_since(self, name: str,
                     cutoff: datetime.datetime | None) -> float | None:
        """``metric()`` with the age check done against a precomputed
        ``cutoff`` (``stale_before(now, max_age)``): None when the metric
        is missing, malformed or reported before ``cutoff``; a cutoff of
        None disables the age check.

        Filters and weighers get the cutoff once per request from
        ``metrics_window()``, which spares them date arithmetic per host
        and metric.
        """
        metric = self.metrics.get(name)
        if metric is None:
            # No reported name holds a colon: a windowed statistic.
            return self._statistic(name, cutoff) if ":" in name else None
        if cutoff is not None and metric.timestamp < cutoff:
            return None
        # Most hosts have no pending claims: spare them the call.
        if self.memory_mb_pending or self.vcpus_pending:
            return self._with_pending(name, metric.value)
        return metric.value

    def _statistic(self, name: str,
                   cutoff: datetime.datetime | None) -> float | None:
        """``metric_since`` of ``<metric>:<stat>:<window>``: the
        statistic over the held reports of a metric whose newest report
        is fresh, with pending claims added as to the value itself (not
        to a standard deviation, which a constant does not move)."""
        try:
            wanted = metric_stat.parse(name)
        except ValueError:
            # Rejected by config check and request parsing: unavailable.
            return None
        metric = self.metrics.get(wanted.metric)
        if metric is None or (cutoff is not None
                              and metric.timestamp < cutoff):
            return None
        value = None
        if wanted.stat != metric_stat.LAST:
            value = self.metric_history.statistic(
                wanted.metric, wanted.stat, wanted.window)
        if value is None:
            # No history held (a state built by hand): the report only.
            value = (0.0 if wanted.stat == metric_stat.STDDEV
                     else metric.value)
        if wanted.stat == metric_stat.STDDEV:
            return value
        return self._with_pending(wanted.metric, value)

    def _with_pending(self, name: str, value: float) -> float:
        if not (self.memory_mb_pending or self.vcpus_pending):
            return value
        pending_bytes = self.memory_mb_pending * MIB
        if name in _MEMORY_DOWN:
            return max(value - pending_bytes, 0.0)
        if name in _MEMORY_UP:
            return value + pending_bytes
        if name == "memory.percent":
            total = self.metrics.get("memory.total")
            if total is None or total.value <= 0:
                return value
            return min(value + 100.0 * pending_bytes / total.value, 100.0)
        if name == "cpu.percent" and self.vcpus > 0:
            # A new instance may keep its vCPUs busy: as busy as
            # [metrics] expected_instance_cpu assumes.
            busy = self.vcpus_pending * self.pending_cpu_fraction
            return min(value + 100.0 * busy / self.vcpus, 100.0)
        return value

    def consume(self, vcpus: int, memory_mb: int, disk_gb: int,
                instance_uuid: str | None = None,
                group: str | None = None) -> None:
        """Account for an instance placed here by this scheduler, before
        the database reflects it (multi-instance requests, local cache)."""
        self.vcpus_claimed += vcpus
        self.memory_mb_claimed += memory_mb
        self.disk_gb_claimed += disk_gb
        self.claims_pending += 1
        self.vcpus_pending += vcpus
        self.memory_mb_pending += memory_mb
        if instance_uuid:
            self.instances.add(instance_uuid)
        if group:
            self.instance_groups.add(group)


def seconds_before(now: datetime.datetime,
                   seconds: float) -> datetime.datetime:
    """``now`` minus ``seconds``, as a cutoff to compare timestamps with:
    ``timestamp < seconds_before(now, limit)`` is ``age > limit``.

    A limit reaching back before year 1 gives the earliest datetime, so
    that nothing is too old, as with the ages it replaces.
    """
    try:
        return now - datetime.timedelta(seconds=seconds)
    except OverflowError:
        return datetime.datetime.min


def stale_before(now: datetime.datetime,
                 max_age: float) -> datetime.datetime | None:
    """The metrics cutoff: reports older than ``max_age`` seconds before
    ``now`` are stale (one exactly ``max_age`` old is not). None when
    ``max_age`` <= 0, which disables the age check."""
    return seconds_before(now, max_age) if max_age > 0 else None


class MetricsWindow(NamedTuple):
    """Which metric reports count as fresh for one request."""

    #: The request's time (``RequestSpec.now``).
    now: datetime.datetime
    #: ``[metrics] max_age`` as read for this request.
    max_age: float
    #: ``stale_before(now, max_age)``, for ``HostState.metric_since()``.
    cutoff: datetime.datetime | None


def metrics_window(spec: RequestSpec, conf: cfg.ConfigOpts) -> MetricsWindow:
    """The metrics freshness of ``spec``: its ``now`` (the clock when the
    scheduler did not set one) and ``[metrics] max_age``, read once per
    request (``spec.memo``) and shared by every filter and weigher that
    reads metrics, so that they all agree on which reports are stale."""
    def window() -> MetricsWindow:
        now = spec.now or clock.utcnow()
        max_age = conf.metrics.max_age
        return MetricsWindow(now, max_age, stale_before(now, max_age))
    return spec.memo("metrics_window", window)


def is_number(value) -> bool:
    """True for finite ints and floats (not bools), the valid metric
    values; an int past a float's range is not one (the host table keeps
    metrics as floats)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def snapshot(hosts: Iterable[HostState]) -> list[HostState]:
    """Private copies of ``hosts`` that ``consume()`` may change.

    ``HostManager.host_states()`` returns the cached objects themselves,
    shared by every thread of the process; a caller placing several
    instances must consume on copies (of the hosts it places on) so that
    neither the cache nor the other requests see its tentative
    placements. The copies are shallow:
    the sets ``consume()`` adds to are copied, the decoded ``metrics`` and
    ``cpu_info`` are shared and must be treated as read-only.
    """
    copies = []
    for host in hosts:
        # A third of copy.copy()'s cost: HostState is a plain dataclass,
        # its state is its __dict__.
        clone = object.__new__(host.__class__)
        clone.__dict__ = {**host.__dict__,
                          "instances": set(host.instances),
                          "instance_groups": set(host.instance_groups)}
        copies.append(clone)
    return copies
