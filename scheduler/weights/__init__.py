"""Weigher plugins: soft constraints that order the remaining hosts.

A weigher is a ``BaseHostWeigher`` subclass registered in the
``scheduler.weighers`` entry-point namespace under its class name, which
is the name operators list in ``[filter_scheduler] weight_classes``.
The scheduler normalises each weigher's raw weights over the candidate
hosts (``[filter_scheduler] weight_normalization``), multiplies by the
weigher's multiplier and sums.

A weigher states its raw weight once, in the form that suits it:

* the per-host form, ``raw_weight(host, spec)`` (or ``raw_weights(hosts,
  spec)`` for a list of hosts, when the weights of the hosts weighed
  together depend on each other, as scaled ones do);
* the column form, ``raw_column(table, rows, spec)``: the raw weights of
  the hosts at positions ``rows`` of a ``HostTable``, NaN for None.

The base class derives the form the weigher does not write: a per-host
weigher's column form is the scheduler calling ``raw_weights()`` with
the candidates (``raw_column()`` answers None); a column weigher's
per-host form is its ``raw_column()`` over a table of just those hosts.
A weigher may still write both forms; they must then agree.
"""

import math
from collections.abc import Sequence

import numpy as np

from scheduler.common.plugin import ConfiguredPlugin
from scheduler.filters import Rejection
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec

NAMESPACE = "scheduler.weighers"


class BaseHostWeigher(ConfiguredPlugin):
    """Base class of weighers; subclasses implement one form of their
    raw weight: ``raw_weight`` (or ``raw_weights``), or ``raw_column``.
    See the module docstring."""

    #: Whether the class writes the column form itself (set for each
    #: subclass).
    writes_column_form = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # Decided once per class; attributes set on an instance (tests
        # switch a column form off that way) do not change it.
        cls.writes_column_form = cls._overrides(BaseHostWeigher,
                                               "raw_column")

    def multiplier(self, spec: RequestSpec) -> float:
        """Scales this weigher's normalised weight; negative inverts it."""
        return 1.0

    def raw_weight(self, host: HostState, spec: RequestSpec) -> float | None:
        """Higher is better; None when the host lacks what is weighed."""
        cls = type(self)
        if not cls._overrides(BaseHostWeigher, "raw_weights") \
                and not cls.writes_column_form:
            raise NotImplementedError(
                f"{self.name} implements neither raw_weight(), "
                "raw_weights() nor raw_column()")
        return self.raw_weights([host], spec)[0]

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
        """``raw_weight()`` of each host, in order, when weighed together
        (the candidates of one decision)."""
        if type(self).raw_weight is BaseHostWeigher.raw_weight \
                and self.writes_column_form:
            return self._raw_weights_from_column(hosts, spec)
        return [self.raw_weight(host, spec) for host in hosts]

    def raw_column(self, table: HostTable, rows: np.ndarray,
                   spec: RequestSpec) -> np.ndarray | None:
        """``raw_weights()`` of the hosts at positions ``rows`` of
        ``table``, as a float array with NaN for None; or None when the
        weigher has no column form (the scheduler then calls
        ``raw_weights()``). A weigher writing the column form only must
        answer an array for every request: its per-host form is derived
        from it."""
        return None

    def _raw_weights_from_column(self, hosts: Sequence[HostState],
                                 spec: RequestSpec) -> list[float | None]:
        """The per-host form of a column weigher: ``raw_column()`` over a
        table of ``hosts``."""
        hosts = list(hosts)
        # The class's column form, not one set on the instance: a caller
        # may switch this instance's column path off (``raw_column``
        # giving None), and the per-host form must still weigh the same.
        column = np.asarray(type(self).raw_column(
            self, HostTable(hosts), np.arange(len(hosts), dtype=np.intp),
            spec), dtype=float)
        if column.shape != (len(hosts),):
            raise TypeError(f"raw_column() returned shape {column.shape}, "
                            f"expected ({len(hosts)},)")
        return [None if math.isnan(weight) else weight
                for weight in column.tolist()]
