"""RamFilter: the flavor's memory must fit in the host's free RAM."""

from collections.abc import Sequence

import numpy as np

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.host_manager import HostState
from scheduler.host_table import HostTable
from scheduler.request_spec import RequestSpec


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


def too_large(resource: str, needed: int, total: int, unit: str,
              ratio: float) -> Rejection:
    """The rejection of a host whose whole physical ``total`` is smaller
    than one instance: shared by the RAM, vCPU and disk filters.

    Overcommit shares a node between instances; one instance never gets
    more than the node has (Nova's old filters and placement's
    ``max_unit`` refuse it too), whatever the allocation ratio.
    """
    return Rejection(f"instance larger than the node's {resource}",
                     f"needs {needed} {unit}, the node has {total} {unit} "
                     f"in all (ratio {ratio:g} applies to the sum of "
                     "instances, not to one)")


class RamFilter(BaseHostFilter):
    """Rejects hosts whose free RAM is below the flavor's ``memory_mb``.

    Free RAM is ``memory_mb x ram_allocation_ratio - claimed``
    (``HostState.free_ram_mb``); the ratio comes from the node or
    ``[filter_scheduler] ram_allocation_ratio``. One instance may not
    have more than the node's physical ``memory_mb``, whatever the ratio.
    A flavor asking for no memory passes even on an overcommitted host.
    """

    def rejections(self, hosts: Sequence[HostState],
                   spec: RequestSpec) -> list[Rejection | None]:
        needed = spec.flavor.memory_mb
        if needed <= 0:
            return [None] * len(hosts)
        return [None if needed <= host.free_ram_mb
                and needed <= host.memory_mb
                else _rejection(host, needed) for host in hosts]

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        needed = spec.flavor.memory_mb
        if needed <= 0:
            return np.ones(len(table), dtype=bool)
        return ((table.attribute("free_ram_mb") >= needed)
                & (table.attribute("memory_mb") >= needed))


def _rejection(host: HostState, needed: int) -> Rejection:
    # Short of free capacity is the usual story; the per-instance maximum
    # has something to add only where overcommit would have let it in.
    if needed <= host.free_ram_mb:
        return too_large("RAM", needed, host.memory_mb, "MB",
                         host.ram_allocation_ratio)
    return Rejection("insufficient RAM", capacity_detail(
        needed, host.free_ram_mb, host.memory_mb, host.ram_allocation_ratio,
        "MB"))
