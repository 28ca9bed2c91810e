"""Nova's names for host values this project names otherwise or keeps in
other units, so that flavors' extra specs (ComputeCapabilitiesFilter)
and ``query`` hints (JsonFilter) written against Nova read the same
values here."""

import collections.abc
import operator

from scheduler.hosts.state import HostState

#: Nova's HostState attribute (and its compute node's ``local_gb``) ->
#: how to read it from this project's HostState.
NOVA_NAMES: dict[str, collections.abc.Callable[[HostState], object]] = {
    "hypervisor_hostname": operator.attrgetter("nodename"),
    "vcpus_total": operator.attrgetter("vcpus"),
    "vcpus_used": operator.attrgetter("vcpus_claimed"),
    "total_usable_ram_mb": operator.attrgetter("memory_mb"),
    "total_usable_disk_gb": operator.attrgetter("disk_gb"),
    "local_gb": operator.attrgetter("disk_gb"),
    "free_disk_mb": lambda host: host.free_disk_gb * 1024,
    "disk_mb_used": lambda host: host.disk_gb_claimed * 1024,
}
