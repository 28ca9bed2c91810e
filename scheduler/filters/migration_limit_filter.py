"""MigrationLimitFilter: keeps migrations from piling onto one host."""

import numpy as np
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.host_state import HostState
from scheduler.host_table import HostTable
from scheduler.request_spec import RequestSpec

_MIGRATIONS = models.Migration.__table__


class MigrationLimitFilter(BaseHostFilter):
    """Rejects hosts that already receive ``[migration]
    max_incoming_per_host`` migrations (planned or running).

    The balancer schedules the instances it moves through the cluster's
    filters; with this one among them a host is never the destination of
    more concurrent migrations than allowed (the balancer itself keeps
    ``max_outgoing_per_host`` on the sources). The counts are read from
    the migrations table once per request.
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
        query = sa.select(_MIGRATIONS.c.dest_node_id, sa.func.count()).where(
            _MIGRATIONS.c.state.in_(models.ACTIVE_MIGRATION_STATES)
        ).group_by(_MIGRATIONS.c.dest_node_id)
        with db_api.get_engine(self.conf).connect() as connection:
            counts = dict(connection.execute(query).all())
        return counts, self.conf.migration.max_incoming_per_host
