"""Host states: what the scheduler knows about each compute node.

``HostState`` is built from a ``compute_nodes`` row plus the claims
(allocations) on that node. Free resources are capacity x allocation ratio
minus claimed resources. Metrics keep their timestamps; a metric older
than ``[metrics] max_age`` is unavailable. Claims made after the node's
last metrics report are *pending*: they are not in the reported metrics
yet, so the resource-linked metrics are adjusted for them until the next
report arrives.
"""

import dataclasses
import datetime
import math

MIB = 1024 * 1024

# Metrics that move when an instance lands on the node, and how.
_MEMORY_DOWN = ("memory.free", "memory.available")
_MEMORY_UP = ("memory.used",)


@dataclasses.dataclass(frozen=True)
class Metric:
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
    #: Claims newer than the last metrics report (not yet in metrics).
    vcpus_pending: int = 0
    memory_mb_pending: int = 0
    cpu_info: dict = dataclasses.field(default_factory=dict)
    networks: frozenset[str] = frozenset()
    #: Valid metrics of the last report, by name.
    metrics: dict[str, Metric] = dataclasses.field(default_factory=dict)
    #: Names of reported metrics that were malformed (not numbers).
    bad_metrics: frozenset[str] = frozenset()
    disabled: bool = False
    disabled_reason: str | None = None
    updated_at: datetime.datetime | None = None
    metrics_updated_at: datetime.datetime | None = None
    generation: int = 0
    changed_at: datetime.datetime | None = None
    instances: set[str] = dataclasses.field(default_factory=set)
    #: Server groups with at least one instance on this host.
    instance_groups: set[str] = dataclasses.field(default_factory=set)

    @property
    def free_vcpus(self) -> float:
        return self.vcpus * self.cpu_allocation_ratio - self.vcpus_claimed

    @property
    def free_ram_mb(self) -> float:
        return self.memory_mb * self.ram_allocation_ratio - \
            self.memory_mb_claimed

    @property
    def free_disk_gb(self) -> float:
        return self.local_disk_limit_gb - self.disk_gb_claimed

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
        metric = self.metrics.get(name)
        if metric is None:
            return None
        if max_age > 0 and (now - metric.timestamp).total_seconds() > max_age:
            return None
        return self._with_pending(name, metric.value)

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
            # A new instance may keep its vCPUs busy; assume it does.
            return min(value + 100.0 * self.vcpus_pending / self.vcpus,
                       100.0)
        return value

    def consume(self, vcpus: int, memory_mb: int, disk_gb: int,
                instance_uuid: str | None = None,
                group: str | None = None) -> None:
        """Account for an instance placed here by this scheduler, before
        the database reflects it (multi-instance requests, local cache)."""
        self.vcpus_claimed += vcpus
        self.memory_mb_claimed += memory_mb
        self.disk_gb_claimed += disk_gb
        self.vcpus_pending += vcpus
        self.memory_mb_pending += memory_mb
        if instance_uuid:
            self.instances.add(instance_uuid)
        if group:
            self.instance_groups.add(group)


def is_number(value) -> bool:
    """True for finite ints and floats (not bools), the valid metric
    values."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))
