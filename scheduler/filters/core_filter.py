"""CoreFilter: the flavor's vCPUs must fit in the host's free vCPUs."""

from collections.abc import Sequence

import numpy as np

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.filters.ram_filter import capacity_detail
from scheduler.filters.ram_filter import too_large
from scheduler.host_manager import HostState
from scheduler.host_table import HostTable
from scheduler.request_spec import RequestSpec


class CoreFilter(BaseHostFilter):
    """Rejects hosts with fewer free vCPUs than the flavor's ``vcpus``.

    Free vCPUs are ``vcpus x cpu_allocation_ratio - claimed``
    (``HostState.free_vcpus``); the ratio comes from the node or
    ``[filter_scheduler] cpu_allocation_ratio``.
    One instance may not have more than the node's physical ``vcpus``,
    whatever the ratio.
    """

    def rejections(self, hosts: Sequence[HostState],
                   spec: RequestSpec) -> list[Rejection | None]:
        needed = spec.flavor.vcpus
        if needed <= 0:
            return [None] * len(hosts)
        return [None if needed <= host.free_vcpus
                and needed <= host.vcpus
                else _rejection(host, needed) for host in hosts]

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        needed = spec.flavor.vcpus
        if needed <= 0:
            return np.ones(len(table), dtype=bool)
        return ((table.attribute("free_vcpus") >= needed)
                & (table.attribute("vcpus") >= needed))


def _rejection(host: HostState, needed: int) -> Rejection:
    # Short of free capacity is the usual story; the per-instance maximum
    # has something to add only where overcommit would have let it in.
    if needed <= host.free_vcpus:
        return too_large("vCPUs", needed, host.vcpus, "vCPUs",
                         host.cpu_allocation_ratio)
    return Rejection("insufficient vCPUs", capacity_detail(
        needed, host.free_vcpus, host.vcpus, host.cpu_allocation_ratio,
        "vCPUs"))
