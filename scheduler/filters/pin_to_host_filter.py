"""PinToHostFilter: honour the request's forced hosts and nodes."""

from collections.abc import Sequence

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.filters.ignore_hosts_filter import folded
from scheduler.hosts.state import HostState
from scheduler.request.spec import RequestSpec

_REASON = "not a forced host"


class PinToHostFilter(BaseHostFilter):
    """Keeps only the hosts the request pins to.

    ``force_hosts`` is matched against the host name, ``force_nodes``
    against the node name, both case-insensitively; an empty list pins
    nothing. When both are given, a host must match both.
    """

    def applies(self, spec: RequestSpec) -> bool:
        return bool(spec.force_hosts or spec.force_nodes)

    def rejections(self, hosts: Sequence[HostState],
                   spec: RequestSpec) -> list[Rejection | None]:
        hosts_wanted, nodes_wanted = spec.memo(
            "PinToHostFilter", lambda: (folded(spec.force_hosts),
                                        folded(spec.force_nodes)))
        return [self._rejection(host, spec, hosts_wanted, nodes_wanted)
                for host in hosts]

    @staticmethod
    def _rejection(host: HostState, spec: RequestSpec,
                   hosts_wanted: frozenset[str],
                   nodes_wanted: frozenset[str]) -> Rejection | None:
        if hosts_wanted and host.host.casefold() not in hosts_wanted:
            return Rejection(_REASON, "forced hosts: "
                             + ", ".join(spec.force_hosts))
        if nodes_wanted and host.nodename.casefold() not in nodes_wanted:
            return Rejection(_REASON, "forced nodes: "
                             + ", ".join(spec.force_nodes))
        return None
