"""CoreFilter: the flavor's vCPUs must fit in the host's free vCPUs."""

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.filters.ram_filter import capacity_detail
from scheduler.host_manager import HostState
from scheduler.request_spec import RequestSpec


class CoreFilter(BaseHostFilter):
    """Rejects hosts with fewer free vCPUs than the flavor's ``vcpus``.

    Free vCPUs are ``vcpus x cpu_allocation_ratio - claimed``
    (``HostState.free_vcpus``); the ratio comes from the node or
    ``[filter_scheduler] cpu_allocation_ratio``.
    """

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        needed = spec.flavor.vcpus
        free = host.free_vcpus
        if needed <= 0 or needed <= free:
            return None
        return Rejection("insufficient vCPUs", capacity_detail(
            needed, free, host.vcpus, host.cpu_allocation_ratio, "vCPUs"))
