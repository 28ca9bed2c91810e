"""Per-instance load, and the hypervisor's own figures, read from libvirt.

Needs libvirt-python, which builds against libvirt's development headers
(``apt-get install libvirt-dev pkg-config``, then ``pip install
libvirt-python``, or the ``libvirt`` extra of this package).
"""

import contextlib
import importlib
import time
import types

from oslo_config import cfg
from oslo_log import log as logging

from compute_monitor import base
from compute_monitor.monitors import _delta

LOG = logging.getLogger(__name__)

KIB = 1024
NS = 1e9
# virDomainState: only a running domain uses CPU for its guest.
_RUNNING = 1
# virNodeGetCPUStats fields (nanoseconds since boot) that are not busy.
_NODE_IDLE = ("idle", "iowait")


class LibvirtUnavailable(RuntimeError):
    """libvirt-python cannot be imported; said once, at start-up."""


def import_libvirt() -> types.ModuleType:
    """The libvirt module, or LibvirtUnavailable with what to do."""
    try:
        libvirt = importlib.import_module("libvirt")
    except ImportError as e:
        raise LibvirtUnavailable(
            f"libvirt-python is not installed ({e}); install it with "
            "'pip install libvirt-python' (it builds against libvirt's "
            "headers: apt-get install libvirt-dev pkg-config) or remove "
            "libvirt from the monitors") from None
    # libvirt prints every error to stderr besides raising it; the
    # exceptions are enough, and the agent logs them.
    libvirt.registerErrorHandler(lambda _context, _error: None, None)
    return libvirt


class LibvirtMonitor(base.ResourceMonitorPluginBase):
    """Reads the hypervisor at ``[compute_monitor] libvirt_uri``.

    For each running domain, keyed by its UUID (the instance uuid):
    ``instance.cpu.percent``, the domain's CPU time since the previous
    cycle as a percentage of its own vCPUs over the elapsed time (from
    the second cycle on), and ``instance.memory.used`` in bytes (what the
    guest uses by its balloon statistics, else the host memory it holds).
    For the node: ``hypervisor.instances`` (running domains),
    ``hypervisor.vcpus.used`` and ``hypervisor.memory.allocated`` (their
    sum), ``hypervisor.memory.total``, ``hypervisor.memory.free`` and
    ``hypervisor.cpu.percent`` (busy share of all CPUs since the
    previous cycle) where the driver knows them.

    The connection is read-only, opened on first use and opened again
    after it fails: a restarted libvirtd costs a cycle, not the agent.
    """

    source = "libvirt"
    #: Everything it may report (without a connection or libvirt-python).
    METRIC_NAMES = frozenset({
        "instance.cpu.percent", "instance.memory.used",
        "hypervisor.instances", "hypervisor.vcpus.used",
        "hypervisor.memory.allocated", "hypervisor.memory.total",
        "hypervisor.memory.free", "hypervisor.cpu.percent"})

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        super().__init__(conf)
        self._libvirt = import_libvirt()
        self._connection = None
        #: Domain UUID -> (CPU time in ns, time.monotonic()) last cycle.
        self._cpu_times: dict[str, tuple[int, float]] = {}
        self._node_times: dict[str, int] | None = None
        self._baseline = False

    def get_metric_names(self) -> set[str]:
        return set(self.METRIC_NAMES)

    def get_metrics(self) -> list[dict]:
        libvirt = self._libvirt
        try:
            connection = self._connect()
            if not self._baseline:
                # Rates need two readings: the first cycle (and --once)
                # takes its own baseline rather than reporting no load.
                self._measure(connection)
                self._baseline = True
                time.sleep(_delta.MIN_WINDOW)
            return self._measure(connection)
        except libvirt.libvirtError:
            # Dropped so that the next cycle reconnects; the agent logs
            # the error as this monitor's failure.
            self._close()
            raise

    def _connect(self):
        if self._connection is None:
            uri = self.conf.compute_monitor.libvirt_uri
            self._connection = self._libvirt.openReadOnly(uri)
        return self._connection

    def _close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            # Already broken, most likely: closing is a courtesy.
            with contextlib.suppress(self._libvirt.libvirtError):
                connection.close()
        # Counters of another connection are no baseline.
        self._cpu_times = {}
        self._node_times = None
        self._baseline = False

    def _measure(self, connection) -> list[dict]:
        libvirt = self._libvirt
        timestamp = base.utc_timestamp()
        entries: list[dict] = []
        cpu_times: dict[str, tuple[int, float]] = {}
        vcpus_used = memory_allocated = running = 0
        for domain in connection.listAllDomains(
                libvirt.VIR_CONNECT_LIST_DOMAINS_RUNNING):
            try:
                uuid = domain.UUIDString()
                state, _max_kib, memory_kib, vcpus, cpu_time = domain.info()
                measured_at = time.monotonic()
                used = _memory_used(domain, memory_kib)
            except libvirt.libvirtError as e:
                # Stopped between the listing and the reading.
                LOG.debug("libvirt monitor: skipping a domain: %s", e)
                continue
            if state != _RUNNING:
                continue
            running += 1
            vcpus_used += vcpus
            memory_allocated += memory_kib * KIB
            cpu_times[uuid] = (cpu_time, measured_at)
            percent = _cpu_percent(self._cpu_times.get(uuid),
                                   cpu_times[uuid], vcpus)
            if percent is not None:
                entries.append(self._entry("instance.cpu.percent", percent,
                                           timestamp, uuid))
            entries.append(self._entry("instance.memory.used", used,
                                       timestamp, uuid))
        # Domains that stopped are forgotten: a new one may get the UUID.
        self._cpu_times = cpu_times
        node = {"hypervisor.instances": running,
                "hypervisor.vcpus.used": vcpus_used,
                "hypervisor.memory.allocated": memory_allocated}
        node.update(self._node_figures(connection))
        entries.extend(self._entry(name, value, timestamp)
                       for name, value in node.items())
        return entries

    def _node_figures(self, connection) -> dict[str, float]:
        """What the driver tells of the node; each figure is optional
        (the test driver, remote drivers, lack some)."""
        libvirt = self._libvirt
        figures: dict[str, float] = {}
        try:
            figures["hypervisor.memory.total"] = \
                connection.getInfo()[1] * KIB * KIB
            figures["hypervisor.memory.free"] = connection.getFreeMemory()
        except libvirt.libvirtError as e:
            LOG.debug("libvirt monitor: no node memory: %s", e)
        try:
            times = connection.getCPUStats(
                libvirt.VIR_NODE_CPU_STATS_ALL_CPUS)
        except libvirt.libvirtError as e:
            LOG.debug("libvirt monitor: no node CPU times: %s", e)
            return figures
        previous, self._node_times = self._node_times, times
        if previous is not None:
            delta = {field: _delta.increase(previous.get(field, 0), value)
                     for field, value in times.items()}
            total = sum(delta.values())
            # No tick elapsed (or a driver whose counters stand still):
            # 0 % would advertise an idle node.
            if total > 0:
                idle = sum(delta.get(field, 0) for field in _NODE_IDLE)
                figures["hypervisor.cpu.percent"] = \
                    100.0 * (total - idle) / total
        return figures


def _cpu_percent(previous: tuple[int, float] | None,
                 current: tuple[int, float], vcpus: int) -> float | None:
    """CPU time over elapsed time, as % of ``vcpus``; None without a
    baseline. Emulator and I/O threads count too, so a guest keeping all
    its vCPUs busy may show slightly over 100."""
    if previous is None or vcpus <= 0:
        return None
    elapsed = current[1] - previous[1]
    if elapsed <= 0:
        return None
    used = _delta.increase(previous[0], current[0]) / NS
    return 100.0 * used / elapsed / vcpus


def _memory_used(domain, memory_kib: int) -> int:
    """Bytes the guest uses: available - unused by the balloon driver's
    statistics (the guest's view, without its page cache), else the
    host memory backing it (rss), else all it was given."""
    stats = domain.memoryStats() or {}
    if "available" in stats and "unused" in stats:
        return max(stats["available"] - stats["unused"], 0) * KIB
    if "rss" in stats:
        return stats["rss"] * KIB
    return memory_kib * KIB
