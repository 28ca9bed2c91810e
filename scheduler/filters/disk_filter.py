"""DiskFilter: the flavor's local disk must fit in the host's free disk."""

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.filters.ram_filter import capacity_detail
from scheduler.host_manager import HostState
from scheduler.request_spec import RequestSpec


class DiskFilter(BaseHostFilter):
    """Rejects hosts with less free disk than the flavor's ``root_gb +
    ephemeral_gb``.

    Free disk is ``disk_gb x disk_allocation_ratio - claimed``
    (``HostState.free_disk_gb``); the ratio comes from the node or
    ``[filter_scheduler] disk_allocation_ratio``. A flavor without local
    disk (volume-backed) passes everywhere.
    """

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        needed = spec.flavor.disk_gb
        free = host.free_disk_gb
        if needed <= 0 or needed <= free:
            return None
        return Rejection("insufficient disk", capacity_detail(
            needed, free, host.disk_gb, host.disk_allocation_ratio, "GB"))
