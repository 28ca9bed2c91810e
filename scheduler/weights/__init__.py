"""Weigher plugins: soft constraints that order the remaining hosts.

A weigher is a ``BaseHostWeigher`` subclass registered in the
``scheduler.weighers`` entry-point namespace under its class name, which
is the name operators list in ``[filter_scheduler] weight_classes``.
The scheduler normalises each weigher's raw weights over the candidate
hosts (``[filter_scheduler] weight_normalization``), multiplies by the
weigher's multiplier and sums.
"""

from collections.abc import Sequence

import numpy as np
from oslo_config import cfg

from scheduler.filters import Rejection
from scheduler.host_manager import HostState
from scheduler.host_table import HostTable
from scheduler.request_spec import RequestSpec

NAMESPACE = "scheduler.weighers"


class BaseHostWeigher:
    """Base class of weighers; subclasses implement ``raw_weight``."""

    def __init__(self, conf: cfg.ConfigOpts):
        self.conf = conf

    @property
    def name(self) -> str:
        return type(self).__name__

    def multiplier(self, spec: RequestSpec) -> float:
        """Scales this weigher's normalised weight; negative inverts it."""
        return 1.0

    def applies(self, spec: RequestSpec) -> bool:
        """False when this weigher has nothing to say about ``spec``."""
        return True

    def raw_weight(self, host: HostState, spec: RequestSpec) -> float | None:
        """Higher is better; None when the host lacks what is weighed."""
        raise NotImplementedError

    def unavailable_removes_host(self, spec: RequestSpec) -> bool:
        """True when a host whose raw weight is None must be removed."""
        return False

    def why_unavailable(self, host: HostState,
                        spec: RequestSpec) -> Rejection | None:
        """Why ``host`` has no raw weight, for the NoValidHost summary and
        explain output when ``unavailable_removes_host``: the reason
        should name what is missing (``required metric unavailable:
        cpu.percent``). None gives a generic reason."""
        return None

    def raw_weights(self, hosts: Sequence[HostState],
                    spec: RequestSpec) -> list[float | None]:
        return [self.raw_weight(host, spec) for host in hosts]

    def raw_column(self, table: HostTable, rows: np.ndarray,
                   spec: RequestSpec) -> np.ndarray | None:
        """``raw_weights()`` of the hosts at positions ``rows`` of
        ``table``, as a float array with NaN for None; or None when the
        weigher has no column form (the scheduler then calls
        ``raw_weights()``)."""
        return None
