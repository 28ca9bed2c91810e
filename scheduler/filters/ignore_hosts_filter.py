"""IgnoreHostsFilter: honour the request's ignored hosts."""

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.host_manager import HostState
from scheduler.request_spec import RequestSpec


class IgnoreHostsFilter(BaseHostFilter):
    """Rejects hosts named in the request's ``ignore_hosts`` (matched
    against the host name), e.g. the source host of a migration."""

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        if host.host in spec.ignore_hosts:
            return Rejection("ignored by request", f"{host.host} is ignored")
        return None
