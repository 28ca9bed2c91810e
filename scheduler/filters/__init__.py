"""Filter plugins: hard constraints that remove hosts from consideration.

A filter is a ``BaseHostFilter`` subclass registered in the
``scheduler.filters`` entry-point namespace under its class name, which is
the name operators list in ``[filter_scheduler] enabled_filters``.

A filter states its rule once, in the form that suits it:

* the per-host form, ``reject(host, spec)`` (or ``rejections(hosts,
  spec)`` for a list of hosts): the verdict and its reason together;
* the column form, ``passes(table, spec)``: the verdicts of a whole
  ``HostTable`` as one boolean array, with ``why_rejected(host, spec)``
  wording the rejection of a host it removed.

The base class derives the form the filter does not write. A per-host
filter runs, on the scheduler's column path, over the hosts still in
play (``passes()`` answers None and the scheduler calls
``rejections()``). A column filter is asked per host by running its
``passes()`` over a table of just those hosts, then ``why_rejected()``
for those it removes; the scheduler, which knows which hosts the column
removed, asks only ``why_rejected()``. A filter may still write both
forms; they must then agree (the property tests check the built-in and
example plugins).
"""

import dataclasses
from collections.abc import Iterable
from collections.abc import Sequence

import numpy as np

from scheduler.common.plugin import ConfiguredPlugin
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec

NAMESPACE = "scheduler.filters"


# Slots: a filter may reject most of a large fleet, and a frozen
# dataclass without them takes twice as long to build.
@dataclasses.dataclass(frozen=True, slots=True)
class Rejection:
    """Why a filter removed a host.

    ``reason`` is short and the same for every host failing the same way
    (it is counted in the NoValidHost histogram: "25 RamFilter
    (insufficient RAM)"); ``detail`` carries this host's numbers for
    explain output.
    """

    reason: str
    detail: str = ""


#: The rejection of a host that a filter removed without saying why (a
#: column filter without ``why_rejected``, or whose ``reject()`` lets
#: through a host its ``passes()`` removed: a plugin bug, which must not
#: hide the host from explain output).
UNEXPLAINED = Rejection("rejected", "the filter gave no reason")


def all_of(conditions: Iterable[np.ndarray], size: int) -> np.ndarray:
    """Where every one of ``conditions`` (boolean arrays of ``size``, each
    a new one) holds, all True when there is none: the first condition
    is the start, not an array of ones, and the result is an array of
    the caller's own, which a subclass may narrow in place."""
    ok = None
    for condition in conditions:
        ok = condition if ok is None else ok & condition
    return np.ones(size, dtype=bool) if ok is None else ok


def checked_verdicts(verdicts: object, size: int) -> np.ndarray:
    """``verdicts`` (what a ``passes()`` returned) as a boolean array of
    ``size`` verdicts; TypeError when it is anything else."""
    verdicts = np.asarray(verdicts)
    if verdicts.dtype != bool or verdicts.shape != (size,):
        raise TypeError(
            f"passes() returned {verdicts.dtype} of shape "
            f"{verdicts.shape}, expected bool of shape ({size},)")
    return verdicts


class BaseHostFilter(ConfiguredPlugin):
    """Base class of filters; subclasses implement one form of their
    rule: ``reject`` (or ``rejections``), or ``passes`` (with
    ``why_rejected``). See the module docstring."""

    #: Which forms the class writes itself (set for each subclass).
    writes_per_host_form = False
    writes_column_form = False
    #: Whether its ``rejection_reasons`` stand for its ``why_rejected``
    #: (set for each subclass).
    reads_reasons = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # Decided once per class, so that the derived forms cost no
        # look-up per call; attributes set on an instance (tests switch
        # a column form off that way) do not change what the class says.
        cls.writes_per_host_form = (
            cls._overrides(BaseHostFilter, "reject")
            or cls._overrides(BaseHostFilter, "rejections"))
        cls.writes_column_form = cls._overrides(BaseHostFilter, "passes")
        # A subclass that words its rejections anew (``why_rejected``),
        # or judges host by host, below the reasons it inherits is asked
        # host by host: the inherited reasons would be another's.
        cls.reads_reasons = (
            cls._overrides(BaseHostFilter, "rejection_reasons")
            and not cls.writes_per_host_form
            and issubclass(cls._writer_of("rejection_reasons"),
                           cls._writer_of("why_rejected")))

    def validate_request(self, spec: RequestSpec) -> None:
        """Raise InvalidRequest-style errors for malformed input the
        filter reads (once per request, before any host is checked)."""

    def warnings(self, spec: RequestSpec) -> list[str]:
        """What the operator should know about ``spec`` although it is
        valid (an extra spec this filter ignores, say): shown once in
        explain output and logged once, never per host."""
        return []

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        """None when ``host`` can take one instance of ``spec``."""
        cls = type(self)
        if not cls._overrides(BaseHostFilter, "rejections") \
                and not cls.writes_column_form:
            raise NotImplementedError(
                f"{self.name} implements neither reject(), rejections() "
                "nor passes()")
        return self.rejections([host], spec)[0]

    def rejections(self, hosts: Sequence[HostState],
                   spec: RequestSpec) -> list[Rejection | None]:
        """``reject()`` of each host, in order: what the scheduler calls,
        with the hosts in blocks of a few hundred, so a host's verdict
        must not depend on the other hosts.

        A filter overrides this rather than ``reject`` to check a fleet
        faster: no method is called per host, which adds up over
        thousands of hosts, and what depends on the request alone
        (options, parsed extra specs, the time) is worked out once per
        request with ``spec.memo()``.
        """
        if type(self).reject is BaseHostFilter.reject \
                and self.writes_column_form:
            return self._rejections_from_column(hosts, spec)
        return [self.reject(host, spec) for host in hosts]

    def passes(self, table: HostTable,
               spec: RequestSpec) -> np.ndarray | None:
        """The verdicts of every host of ``table`` at once: a boolean
        array, True where ``reject()`` gives None; or None when the
        filter has no column form (the scheduler then calls
        ``rejections()`` with the hosts left).

        A filter writing the column form only must answer an array for
        every request: its per-host form is derived from it, and a None
        there fails every host asked (``plugin_guard``).

        The fast path of large fleets: a filter that implements it is
        asked why (``why_rejected()``, or its per-host form when it
        writes one) only for the hosts it removed, and only when someone
        wants to know (explain, NoValidHost).
        """
        return None

    def why_rejected(self, host: HostState,
                     spec: RequestSpec) -> Rejection | None:
        """Why the column form removed ``host``: asked only for hosts
        ``passes()`` rejected, to word the rejection (the reason the
        NoValidHost histogram counts, this host's numbers as the
        detail); it explains, it never decides. None gives a generic
        reason (``UNEXPLAINED``)."""
        return None

    def rejection_reasons(self, table: HostTable, rows: np.ndarray,
                          spec: RequestSpec) -> Sequence[str] | None:
        """The reason ``why_rejected()`` gives each host at ``rows`` of
        ``table`` (hosts ``passes()`` removed), read from the table's
        columns; None (the default): each host is asked
        ``why_rejected()``. A NoValidHost summary counts hosts by reason
        only: asked host by host, a full fleet of 20,000 built a state
        and worded a detail for every host, ten placements' CPU or more.
        A subclass that writes ``why_rejected``, ``reject`` or
        ``rejections`` without this is asked host by host."""
        return None

    def _rejections_from_column(self, hosts: Sequence[HostState],
                                spec: RequestSpec
                                ) -> list[Rejection | None]:
        """The per-host form of a column filter: ``passes()`` over a
        table of ``hosts``, worded by ``why_rejected()``."""
        hosts = list(hosts)
        # The class's column form, not one set on the instance: a caller
        # may switch this instance's column path off (``passes`` giving
        # None), and the per-host form must still state the same rule.
        verdicts = checked_verdicts(
            type(self).passes(self, HostTable(hosts), spec), len(hosts))
        return [None if ok else self.why_rejected(host, spec) or UNEXPLAINED
                for host, ok in zip(hosts, verdicts.tolist(), strict=True)]
