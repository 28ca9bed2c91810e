"""AvailabilityZoneFilter: honour the request's availability zone."""

import numpy as np

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec


class AvailabilityZoneFilter(BaseHostFilter):
    """When the request sets ``availability_zone``, rejects hosts in any
    other zone (or in none); without it every host passes."""

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        wanted = spec.availability_zone
        if not wanted:
            return np.ones(len(table), dtype=bool)
        return table.matches("availability_zone", wanted)

    def why_rejected(self, host: HostState,
                     spec: RequestSpec) -> Rejection:
        return Rejection(f"not in availability zone {spec.availability_zone}",
                         f"host is in {host.availability_zone or 'no zone'}")
