"""ClusterFilter: honour the request's cluster."""

import numpy as np

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec


class ClusterFilter(BaseHostFilter):
    """When the request sets ``cluster``, rejects hosts of any other
    cluster (or of none); without it every host passes."""

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        wanted = spec.cluster
        if not wanted:
            return np.ones(len(table), dtype=bool)
        return table.matches("cluster", wanted)

    def why_rejected(self, host: HostState,
                     spec: RequestSpec) -> Rejection:
        return Rejection(f"not in cluster {spec.cluster}",
                         f"host is in {host.cluster or 'no cluster'}")
