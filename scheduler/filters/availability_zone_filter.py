"""AvailabilityZoneFilter: honour the request's availability zone."""

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.host_manager import HostState
from scheduler.request_spec import RequestSpec


class AvailabilityZoneFilter(BaseHostFilter):
    """When the request sets ``availability_zone``, rejects hosts in any
    other zone (or in none); without it every host passes."""

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        wanted = spec.availability_zone
        if not wanted or host.availability_zone == wanted:
            return None
        return Rejection(f"not in availability zone {wanted}",
                         f"host is in {host.availability_zone or 'no zone'}")
