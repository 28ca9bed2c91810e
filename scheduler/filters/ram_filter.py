"""RamFilter: the flavor's memory must fit in the host's free RAM."""

from scheduler.filters.capacity import CapacityFilter


class RamFilter(CapacityFilter):
    """Rejects hosts whose free RAM is below the flavor's ``memory_mb``.

    Free RAM is ``memory_mb x ram_allocation_ratio - claimed``
    (``HostState.free_ram_mb``); the ratio comes from the node or
    ``[filter_scheduler] ram_allocation_ratio``. One instance may not
    have more than the node's physical ``memory_mb``, whatever the ratio.
    A flavor asking for no memory passes even on an overcommitted host.
    """

    flavor_amount = "memory_mb"
    free = "free_ram_mb"
    capacity = "memory_mb"
    ratio = "ram_allocation_ratio"
    resource = "RAM"
    unit = "MB"
