"""ComputeFilter: only enabled nodes with a recent heartbeat."""

import datetime

import numpy as np

from scheduler.common import clock
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.hosts import change_kinds
from scheduler.hosts.column_functions import attribute_epoch
from scheduler.hosts.state import HostState
from scheduler.hosts.state import seconds_before
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import epoch
from scheduler.request.spec import RequestSpec


class ComputeFilter(BaseHostFilter):
    """Rejects disabled nodes and nodes that look down.

    A node is down when its heartbeat (``updated_at``, naive UTC) is
    missing or older than ``[filter_scheduler] service_down_time``
    seconds; a heartbeat exactly that old still counts as up.
    """

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        _now, oldest = spec.memo("ComputeFilter",
                                 lambda: self._heartbeat_window(spec))
        # A missing heartbeat is NaN, which compares False: down.
        heartbeat = table.column("heartbeat", float,
                                 attribute_epoch("updated_at"),
                                 change_kinds.REPORTS)
        return ~table.attribute("disabled", bool) & (
            heartbeat >= epoch(oldest))

    def why_rejected(self, host: HostState,
                     spec: RequestSpec) -> Rejection:
        now, _oldest = spec.memo("ComputeFilter",
                                 lambda: self._heartbeat_window(spec))
        if host.disabled:
            return Rejection(
                "disabled",
                f"disabled: {host.disabled_reason or 'no reason given'}")
        if host.updated_at is None:
            return Rejection("down", "no heartbeat reported")
        age = (now - host.updated_at).total_seconds()
        return Rejection("down", f"no heartbeat for {int(age)} s")

    def rejection_reasons(self, table: HostTable, rows: np.ndarray,
                          spec: RequestSpec) -> list[str]:
        disabled = table.attribute("disabled", bool)[rows].tolist()
        return ["disabled" if off else "down" for off in disabled]

    def _heartbeat_window(
            self, spec: RequestSpec
    ) -> tuple[datetime.datetime, datetime.datetime]:
        """(now, oldest heartbeat of a node that is up) for ``spec``.

        Once per request rather than once per filter object, so that a
        reloaded ``service_down_time`` applies without a restart.
        """
        now = spec.now or clock.utcnow()
        return now, seconds_before(
            now, self.conf.filter_scheduler.service_down_time)

