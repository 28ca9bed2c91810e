"""The shape shared by the CPU, RAM, disk and instance-count weighers.

Each weighs one numeric ``HostState`` attribute as it is, scaled by one
``[filter_scheduler]`` multiplier option: ``AttributeWeigher`` states
that once, as a column form; a subclass names the attribute and the
option.
"""

import numpy as np

from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec
from scheduler.weights import BaseHostWeigher


class AttributeWeigher(BaseHostWeigher):
    """Weighs the ``HostState`` attribute (or property) named by
    ``attribute``, scaled by the ``[filter_scheduler]`` option named by
    ``multiplier_option``."""

    #: The ``HostState`` attribute weighed.
    attribute: str
    #: The ``[filter_scheduler]`` option holding the multiplier.
    multiplier_option: str

    def multiplier(self, spec: RequestSpec) -> float:
        return getattr(self.conf.filter_scheduler, self.multiplier_option)

    def raw_column(self, table: HostTable, rows: np.ndarray,
                   spec: RequestSpec) -> np.ndarray:
        return table.attribute(self.attribute)[rows]
