"""RAMWeigher: prefer hosts with more free RAM."""

from collections.abc import Sequence

import numpy as np

from scheduler.host_manager import HostState
from scheduler.host_table import HostTable
from scheduler.request_spec import RequestSpec
from scheduler.weights import BaseHostWeigher


class RAMWeigher(BaseHostWeigher):
    """Weighs free RAM in MB (capacity x ram_allocation_ratio minus
    claims). ``[filter_scheduler] ram_weight_multiplier`` > 0 spreads
    instances over hosts, < 0 stacks them."""

    def multiplier(self, spec: RequestSpec) -> float:
        return self.conf.filter_scheduler.ram_weight_multiplier

    def raw_weight(self, host: HostState, spec: RequestSpec) -> float:
        return float(host.free_ram_mb)

    def raw_weights(self, hosts: Sequence[HostState],
                    spec: RequestSpec) -> list[float | None]:
        # raw_weight() without a method call per host.
        return [float(host.free_ram_mb) for host in hosts]

    def raw_column(self, table: HostTable, rows: np.ndarray,
                   spec: RequestSpec) -> np.ndarray:
        return table.attribute("free_ram_mb")[rows]
