"""NumInstancesFilter: cap the number of instances per host."""

import numpy as np

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec


class NumInstancesFilter(BaseHostFilter):
    """Rejects hosts already running ``[filter_scheduler]
    max_instances_per_host`` instances or more."""

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        limit = self.conf.filter_scheduler.max_instances_per_host
        return table.attribute("num_instances") < limit

    def why_rejected(self, host: HostState,
                     spec: RequestSpec) -> Rejection:
        limit = self.conf.filter_scheduler.max_instances_per_host
        return Rejection("too many instances",
                         f"{host.num_instances} instances, limit {limit}")
