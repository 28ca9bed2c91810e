"""Units of the metrics the built-in monitors report.

Metrics are stored as bare numbers; operators choosing ``weight_setting``
ratios or ``resources:`` thresholds need the unit to scale them. The
``weight_setting`` help, ``scheduler-manage metrics list`` and the docs
take the units from here.
"""

_CPU_TIME = "seconds since boot"
_CPU_SHARE = "% of all CPUs over the last interval"

BUILTIN_UNITS: dict[str, str] = {
    "cpu.frequency": "MHz",
    "cpu.user.time": _CPU_TIME,
    "cpu.kernel.time": _CPU_TIME,
    "cpu.idle.time": _CPU_TIME,
    "cpu.iowait.time": _CPU_TIME,
    "cpu.user.percent": _CPU_SHARE,
    "cpu.kernel.percent": _CPU_SHARE,
    "cpu.idle.percent": _CPU_SHARE,
    "cpu.iowait.percent": _CPU_SHARE,
    "cpu.percent": _CPU_SHARE,
    "memory.total": "bytes",
    "memory.used": "bytes",
    "memory.free": "bytes",
    "memory.available": "bytes",
    "memory.percent": "%",
    "network.rx.bps": "bytes/s",
    "network.tx.bps": "bytes/s",
    "disk.read.bps": "bytes/s",
    "disk.write.bps": "bytes/s",
    "disk.iops": "operations/s",
    "disk.total": "bytes",
    "disk.used": "bytes",
    "disk.free": "bytes",
    "disk.percent": "%",
    # The libvirt monitor: the hypervisor's figures...
    "hypervisor.cpu.percent": _CPU_SHARE,
    "hypervisor.memory.total": "bytes",
    "hypervisor.memory.free": "bytes",
    "hypervisor.memory.allocated": "bytes",
    "hypervisor.vcpus.used": "vCPUs",
    "hypervisor.instances": "running instances",
    # ... and each instance's (entries with "instance": uuid).
    "instance.cpu.percent": "% of the instance's own vCPUs over the last "
                            "interval",
    "instance.memory.used": "bytes",
}

#: Names of per-instance entries, never weighed (balancers read them).
INSTANCE_PREFIX = "instance."


def unit(name: str) -> str | None:
    """The unit of a built-in metric; None for others (the file monitor,
    plugins: as their authors wrote them)."""
    return BUILTIN_UNITS.get(name)
