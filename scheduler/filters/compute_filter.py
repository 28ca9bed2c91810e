"""ComputeFilter: only enabled nodes with a recent heartbeat."""

from scheduler.db.models import utcnow
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.host_manager import HostState
from scheduler.request_spec import RequestSpec


class ComputeFilter(BaseHostFilter):
    """Rejects disabled nodes and nodes that look down.

    A node is down when its heartbeat (``updated_at``, naive UTC) is
    missing or older than ``[filter_scheduler] service_down_time``
    seconds; a heartbeat exactly that old still counts as up.
    """

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        if host.disabled:
            return Rejection(
                "disabled",
                f"disabled: {host.disabled_reason or 'no reason given'}")
        if host.updated_at is None:
            return Rejection("down", "no heartbeat reported")
        age = (utcnow() - host.updated_at).total_seconds()
        # Read per call so a config reload applies without a restart.
        if age > self.conf.filter_scheduler.service_down_time:
            return Rejection("down", f"no heartbeat for {int(age)} s")
        return None
