"""AvailabilityZoneFilter: honour the request's availability zone."""

from collections.abc import Sequence

import numpy as np

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.host_manager import HostState
from scheduler.host_table import HostTable
from scheduler.request_spec import RequestSpec


class AvailabilityZoneFilter(BaseHostFilter):
    """When the request sets ``availability_zone``, rejects hosts in any
    other zone (or in none); without it every host passes."""

    def rejections(self, hosts: Sequence[HostState],
                   spec: RequestSpec) -> list[Rejection | None]:
        wanted = spec.availability_zone
        if not wanted:
            return [None] * len(hosts)
        return [None if host.availability_zone == wanted
                else _elsewhere(host, wanted) for host in hosts]


    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        wanted = spec.availability_zone
        if not wanted:
            return np.ones(len(table), dtype=bool)
        return table.matches("availability_zone", wanted)


def _elsewhere(host: HostState, wanted: str) -> Rejection:
    return Rejection(f"not in availability zone {wanted}",
                     f"host is in {host.availability_zone or 'no zone'}")
