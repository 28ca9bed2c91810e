"""NumInstancesWeigher: weigh hosts by how many instances they run."""

from collections.abc import Sequence

import numpy as np

from scheduler.host_manager import HostState
from scheduler.host_table import HostTable
from scheduler.request_spec import RequestSpec
from scheduler.weights import BaseHostWeigher


class NumInstancesWeigher(BaseHostWeigher):
    """Weighs the number of instances on the host.
    ``[filter_scheduler] num_instances_weight_multiplier`` > 0 packs
    instances onto busy hosts, < 0 prefers quiet ones; the default 0.0
    leaves it without effect."""

    def multiplier(self, spec: RequestSpec) -> float:
        return self.conf.filter_scheduler.num_instances_weight_multiplier

    def raw_weight(self, host: HostState, spec: RequestSpec) -> float:
        return float(host.num_instances)

    def raw_weights(self, hosts: Sequence[HostState],
                    spec: RequestSpec) -> list[float | None]:
        # raw_weight() without a method call per host.
        return [float(host.num_instances) for host in hosts]

    def raw_column(self, table: HostTable, rows: np.ndarray,
                   spec: RequestSpec) -> np.ndarray:
        return table.attribute("num_instances")[rows]
