"""PinToHostFilter: honour the request's forced hosts and nodes."""

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.host_manager import HostState
from scheduler.request_spec import RequestSpec

_REASON = "not a forced host"


class PinToHostFilter(BaseHostFilter):
    """Keeps only the hosts the request pins to.

    ``force_hosts`` is matched against the host name, ``force_nodes``
    against the node name; an empty list pins nothing. When both are
    given, a host must match both.
    """

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        if spec.force_hosts and host.host not in spec.force_hosts:
            return Rejection(_REASON, "forced hosts: "
                             + ", ".join(spec.force_hosts))
        if spec.force_nodes and host.nodename not in spec.force_nodes:
            return Rejection(_REASON, "forced nodes: "
                             + ", ".join(spec.force_nodes))
        return None
