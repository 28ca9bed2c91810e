"""DiskFilter: the flavor's local disk must fit in the host's free disk."""

from scheduler.filters.capacity import CapacityFilter


class DiskFilter(CapacityFilter):
    """Rejects hosts with less free disk than the flavor's ``root_gb +
    ephemeral_gb``.

    Free disk is ``disk_gb x disk_allocation_ratio - claimed``
    (``HostState.free_disk_gb``); the ratio comes from the node or
    ``[filter_scheduler] disk_allocation_ratio``. A flavor without local
    disk (volume-backed) passes everywhere.
    One instance may not have more than the node's physical ``disk_gb``,
    whatever the ratio.
    """

    flavor_amount = "disk_gb"
    free = "free_disk_gb"
    capacity = "disk_gb"
    ratio = "disk_allocation_ratio"
    resource = "disk"
    unit = "GB"
