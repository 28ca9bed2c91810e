"""CoreFilter: the flavor's vCPUs must fit in the host's free vCPUs."""

from scheduler.filters.capacity import CapacityFilter


class CoreFilter(CapacityFilter):
    """Rejects hosts with fewer free vCPUs than the flavor's ``vcpus``.

    Free vCPUs are ``vcpus x cpu_allocation_ratio - claimed``
    (``HostState.free_vcpus``); the ratio comes from the node or
    ``[filter_scheduler] cpu_allocation_ratio``.
    One instance may not have more than the node's physical ``vcpus``,
    whatever the ratio.
    """

    flavor_amount = "vcpus"
    free = "free_vcpus"
    capacity = "vcpus"
    ratio = "cpu_allocation_ratio"
    resource = "vCPUs"
    unit = "vCPUs"
