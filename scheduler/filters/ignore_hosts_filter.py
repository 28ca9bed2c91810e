"""IgnoreHostsFilter: honour the request's ignored hosts."""

from collections.abc import Iterable
from collections.abc import Sequence

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.hosts.state import HostState
from scheduler.request.spec import RequestSpec


def folded(names: Iterable[str]) -> frozenset[str]:
    """``names`` case-folded, for matching host and node names as Nova
    does: an API caller may write ``NODE-A0`` for ``node-a0``."""
    return frozenset(name.casefold() for name in names)


class IgnoreHostsFilter(BaseHostFilter):
    """Rejects hosts named in the request's ``ignore_hosts`` (matched
    against the host name, case-insensitively), e.g. the source host of a
    migration."""

    def applies(self, spec: RequestSpec) -> bool:
        return bool(spec.ignore_hosts)

    def rejections(self, hosts: Sequence[HostState],
                   spec: RequestSpec) -> list[Rejection | None]:
        ignored = spec.memo("IgnoreHostsFilter",
                            lambda: folded(spec.ignore_hosts))
        return [Rejection("ignored by request", f"{host.host} is ignored")
                if host.host.casefold() in ignored else None
                for host in hosts]
