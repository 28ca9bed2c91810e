"""The shape shared by the RAM, vCPU and disk filters.

Each checks one resource the same way: the flavor's amount must fit in
the host's free amount (capacity x allocation ratio - claims) and in its
physical capacity. ``CapacityFilter`` states that rule once, as a column
form; a subclass names its resource's attributes.
"""

import numpy as np

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec


def _number(value: float) -> str:
    # Capacity x ratio is a float; "12288" reads better than "12288.0".
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.2f}".rstrip("0")


def capacity_detail(needed: int, free: float, capacity: int, ratio: float,
                    unit: str) -> str:
    """``needs 4096 MB, 2048 MB free of 8192 MB x 1.5``: the explain
    detail shared by the RAM, vCPU and disk filters."""
    return (f"needs {needed} {unit}, {_number(free)} {unit} free of "
            f"{capacity} {unit} x {ratio:g}")


def too_large_reason(resource: str) -> str:
    """The reason of ``too_large``."""
    return f"instance larger than the node's {resource}"


def insufficient_reason(resource: str) -> str:
    """The reason of a host short of free ``resource``."""
    return f"insufficient {resource}"


def too_large(resource: str, needed: int, total: int, unit: str,
              ratio: float) -> Rejection:
    """The rejection of a host whose whole physical ``total`` is smaller
    than one instance: shared by the RAM, vCPU and disk filters.

    Overcommit shares a node between instances; one instance never gets
    more than the node has (Nova's old filters and placement's
    ``max_unit`` refuse it too), whatever the allocation ratio.
    """
    return Rejection(too_large_reason(resource),
                     f"needs {needed} {unit}, the node has {total} {unit} "
                     f"in all (ratio {ratio:g} applies to the sum of "
                     "instances, not to one)")


class CapacityFilter(BaseHostFilter):
    """Rejects hosts where the flavor's amount of one resource exceeds
    the free amount (``HostState.<free>``) or the node's physical
    capacity; a flavor asking for none of it passes everywhere.

    A subclass names the resource: the ``Flavor`` attribute of the amount
    asked, the ``HostState`` attributes of the free amount, the physical
    capacity and the allocation ratio, and the words of its rejections.
    """

    #: ``Flavor`` attribute: the amount one instance asks.
    flavor_amount: str
    #: ``HostState`` attributes: free amount (ratio applied, claims
    #: deducted), physical capacity, allocation ratio.
    free: str
    capacity: str
    ratio: str
    #: In rejections: "insufficient <resource>", "<needed> <unit>".
    resource: str
    unit: str

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        needed = getattr(spec.flavor, self.flavor_amount)
        ok = np.ones(len(table), dtype=bool)
        if needed <= 0:
            return ok
        for name in (self.free, self.capacity):
            # Where every host has room, no pass over the hosts.
            if not table.attribute_at_least(name, needed):
                ok &= table.attribute(name) >= needed
        return ok

    def why_rejected(self, host: HostState,
                     spec: RequestSpec) -> Rejection:
        needed = getattr(spec.flavor, self.flavor_amount)
        free = getattr(host, self.free)
        capacity = getattr(host, self.capacity)
        ratio = getattr(host, self.ratio)
        # Short of free capacity is the usual story; the per-instance
        # maximum has something to add only where overcommit would have
        # let it in.
        if needed <= free:
            return too_large(self.resource, needed, capacity, self.unit,
                             ratio)
        return Rejection(insufficient_reason(self.resource),
                         capacity_detail(needed, free, capacity, ratio,
                                         self.unit))

    def rejection_reasons(self, table: HostTable, rows: np.ndarray,
                          spec: RequestSpec) -> list[str]:
        needed = getattr(spec.flavor, self.flavor_amount)
        # As why_rejected compares: a NaN free amount has no room.
        room = (table.attribute(self.free)[rows] >= needed).tolist()
        insufficient = insufficient_reason(self.resource)
        larger = too_large_reason(self.resource)
        return [larger if fits else insufficient for fits in room]
