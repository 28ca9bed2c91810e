"""DiskFilter: the flavor's local disk must fit in the host's free disk."""

from collections.abc import Sequence

import numpy as np

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.filters.ram_filter import capacity_detail
from scheduler.filters.ram_filter import too_large
from scheduler.host_manager import HostState
from scheduler.host_table import HostTable
from scheduler.request_spec import RequestSpec


class DiskFilter(BaseHostFilter):
    """Rejects hosts with less free disk than the flavor's ``root_gb +
    ephemeral_gb``.

    Free disk is ``disk_gb x disk_allocation_ratio - claimed``
    (``HostState.free_disk_gb``); the ratio comes from the node or
    ``[filter_scheduler] disk_allocation_ratio``. A flavor without local
    disk (volume-backed) passes everywhere.
    One instance may not have more than the node's physical ``disk_gb``,
    whatever the ratio.
    """

    def rejections(self, hosts: Sequence[HostState],
                   spec: RequestSpec) -> list[Rejection | None]:
        needed = spec.flavor.disk_gb
        if needed <= 0:
            return [None] * len(hosts)
        return [None if needed <= host.free_disk_gb
                and needed <= host.disk_gb
                else _rejection(host, needed) for host in hosts]

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        needed = spec.flavor.disk_gb
        if needed <= 0:
            return np.ones(len(table), dtype=bool)
        return ((table.attribute("free_disk_gb") >= needed)
                & (table.attribute("disk_gb") >= needed))


def _rejection(host: HostState, needed: int) -> Rejection:
    # Short of free capacity is the usual story; the per-instance maximum
    # has something to add only where overcommit would have let it in.
    if needed <= host.free_disk_gb:
        return too_large("disk", needed, host.disk_gb, "GB",
                         host.disk_allocation_ratio)
    return Rejection("insufficient disk", capacity_detail(
        needed, host.free_disk_gb, host.disk_gb, host.disk_allocation_ratio,
        "GB"))
