"""NetworkFilter: the host must reach every requested network."""

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.hosts.state import HostState
from scheduler.request.spec import RequestSpec


class NetworkFilter(BaseHostFilter):
    """Rejects hosts lacking any network of the request's
    ``requested_networks`` (checked against ``HostState.networks``)."""

    def applies(self, spec: RequestSpec) -> bool:
        return bool(spec.requested_networks)

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        missing = sorted(set(spec.requested_networks) - host.networks)
        if not missing:
            return None
        has = ", ".join(sorted(host.networks)) or "none"
        return Rejection(f"missing network(s) {', '.join(missing)}",
                         f"host has {has}")
