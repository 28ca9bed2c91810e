"""ComputeFilter: only enabled nodes with a recent heartbeat."""

import datetime
from collections.abc import Sequence

from scheduler.db.models import utcnow
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.host_manager import HostState
from scheduler.host_manager import seconds_before
from scheduler.request_spec import RequestSpec


class ComputeFilter(BaseHostFilter):
    """Rejects disabled nodes and nodes that look down.

    A node is down when its heartbeat (``updated_at``, naive UTC) is
    missing or older than ``[filter_scheduler] service_down_time``
    seconds; a heartbeat exactly that old still counts as up.
    """

    def rejections(self, hosts: Sequence[HostState],
                   spec: RequestSpec) -> list[Rejection | None]:
        now = spec.now or utcnow()
        # Read per call so a config reload applies without a restart.
        oldest = seconds_before(
            now, self.conf.filter_scheduler.service_down_time)
        return [_why_not(host, now)
                if host.disabled or host.updated_at is None
                or host.updated_at < oldest else None
                for host in hosts]


def _why_not(host: HostState, now: datetime.datetime) -> Rejection:
    """The rejection of a host that is disabled or down."""
    if host.disabled:
        return Rejection(
            "disabled",
            f"disabled: {host.disabled_reason or 'no reason given'}")
    if host.updated_at is None:
        return Rejection("down", "no heartbeat reported")
    age = (now - host.updated_at).total_seconds()
    return Rejection("down", f"no heartbeat for {int(age)} s")
