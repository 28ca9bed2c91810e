"""MigrationLimitFilter: keeps migrations from piling onto one host."""

import numpy as np

from scheduler.db import migration_sql
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec


class MigrationLimitFilter(BaseHostFilter):
    """Rejects hosts that already receive ``[migration]
    max_incoming_per_host`` migrations (planned or running).

    The balancer schedules the instances it moves through the cluster's
    filters; with this one among them a host is never the destination of
    more concurrent migrations than allowed (the balancer itself keeps
    ``max_outgoing_per_host`` on the sources). The counts are read from
    the migrations table once per request
    (``scheduler.db.migration_sql.incoming_by_destination``).
    """

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        incoming, limit = spec.memo("MigrationLimitFilter",
                                    lambda: self._incoming())
        full = [node for node, count in incoming.items() if count >= limit]
        return ~np.isin(table.attribute("node_id", np.int64), full)

    def why_rejected(self, host: HostState,
                     spec: RequestSpec) -> Rejection:
        incoming, limit = spec.memo("MigrationLimitFilter",
                                    lambda: self._incoming())
        return Rejection("too many incoming migrations",
                         f"{incoming.get(host.node_id, 0)} incoming, "
                         f"limit {limit}")

    def _incoming(self) -> tuple[dict[int, int], int]:
        """Active migrations by destination node, and the limit."""
        return (migration_sql.incoming_by_destination(self.conf),
                self.conf.migration.max_incoming_per_host)
