"""What a decision found: the chosen hosts, each candidate's weights and
the hosts removed with why (``Decision``), and how they are shown
(``explain``, the NoValidHost histogram, the debug cost table)."""

import collections
import dataclasses
import math
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence

import numpy as np

from scheduler import filters
from scheduler.common import text_table
from scheduler.engine import plugin_guard
from scheduler.hosts import state as hm
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec


@dataclasses.dataclass
class WeighedTerm:
    """One weigher's part of one host's weight."""

    raw: float | None
    normalized: float | None
    #: The weigher's multiplier for this request, a policy's factor
    #: included.
    multiplier: float | None = None
    #: What it added to the weight: multiplier x normalized, or
    #: [metrics] weight_of_unavailable where there is no normalized one.
    weighted: float | None = None


@dataclasses.dataclass
class HostResult:
    """What happened to one host in one decision (explain output)."""

    host: hm.HostState
    filtered_by: str | None = None
    reason: str | None = None
    detail: str | None = None
    weight: float | None = None
    weights: dict[str, WeighedTerm] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Decision:
    """One instance's placement: the ordered candidates and every host's
    fate. ``selected`` is the chosen host then the alternates."""

    selected: list[hm.HostState]
    #: The weight of each host of ``selected``, in the same order.
    selected_weights: list[float] = dataclasses.field(default_factory=list)
    #: The position of each host of ``selected`` in the decision's table.
    selected_rows: list[int] = dataclasses.field(
        default_factory=list, repr=False, compare=False)
    summary: str = ""
    #: What the request probably did not mean (a misspelt extra-spec
    #: scope, a key no plugin reads), each once.
    warnings: list[str] = dataclasses.field(default_factory=list)
    #: Hosts that passed every filter and weigher, and hosts considered.
    candidates: int = 0
    hosts: int = 0
    #: Hosts removed, by the name of the filter (or weigher) that did.
    removed_by: dict[str, int] = dataclasses.field(
        default_factory=dict, repr=False, compare=False)
    # Builds ``results``, on first use only.
    _explain: Callable[[], list[HostResult]] = dataclasses.field(
        default=list, repr=False, compare=False)
    _results: list[HostResult] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False)

    @property
    def results(self) -> list[HostResult]:
        """Every host's fate: the candidates best first, then the hosts
        filtered out, in the order they were given.

        Built on first use: one object per host and weigher costs more
        than filtering and weighing, and placing an instance needs only
        ``selected`` and ``selected_weights``.
        """
        if self._results is None:
            self._results = self._explain()
        return self._results

    def as_dict(self) -> dict:
        """The JSON form of ``explain --format json``
        (docs/operator-guide.md)."""
        return {
            "selected": [h.host for h in self.selected],
            "summary": self.summary,
            "warnings": list(self.warnings),
            "hosts": [{
                "host": r.host.host,
                "nodename": r.host.nodename,
                "filtered_by": r.filtered_by,
                "reason": r.reason,
                "detail": r.detail,
                "weight": r.weight,
                "weights": {name: dataclasses.asdict(term)
                            for name, term in r.weights.items()},
            } for r in self.results],
        }


@dataclasses.dataclass
class Weighed:
    """The candidates of one decision with their weights, by column."""

    #: Positions of the candidates in the decision's table.
    rows: np.ndarray
    #: (weigher name, raw weights, normalised weights, multiplier, what
    #: each adds to the total) per weigher, NaN where unavailable.
    terms: list[tuple[str, np.ndarray, np.ndarray, float, np.ndarray]]
    #: The sum of multiplier x normalised weight over the weighers.
    totals: np.ndarray


#: A host rejected by a filter or weigher (named), and why.
_Rejected = tuple[hm.HostState, str, filters.Rejection]


def histogram(total: int, rejected: Mapping[tuple[str, str], int]) -> str:
    """``0/40 hosts available: 25 RamFilter (insufficient RAM), ...``;
    ``rejected``: hosts by (filter or weigher name, reason)
    (``Removed.reasons``)."""
    parts = [f"{count} {name} ({reason})" for (name, reason), count in
             sorted(rejected.items(), key=lambda item: (-item[1], item[0]))]
    available = total - sum(rejected.values())
    text = f"{available}/{total} hosts available"
    return f"{text}: {', '.join(parts)}" if parts else text


class Removed:
    """The hosts of one decision that a filter or weigher removed.

    Filters with a column form only say which hosts fail; why (the
    Rejection) is asked of them when explain output or a NoValidHost
    histogram needs it, not on the path of a successful placement.
    """

    def __init__(self, hosts: Sequence[hm.HostState]):
        self._hosts = hosts
        #: (filter or weigher, rows) in the order they were removed.
        self._batches: list[tuple[object, np.ndarray]] = []
        self._known: list[tuple[int, object, filters.Rejection]] = []
        self._records: list[_Rejected] | None = None
        #: Each batch's rejections, by its position, once asked.
        self._explained: dict[int, list[filters.Rejection]] = {}

    def add(self, row: int, judge: object,
            rejection: filters.Rejection) -> None:
        self._known.append((row, judge, rejection))

    def add_all(self, mask: np.ndarray, host_filter: filters.BaseHostFilter
                ) -> None:
        if mask.any():
            self._batches.append((host_filter, np.flatnonzero(mask)))

    def counts(self) -> dict[str, int]:
        """Hosts removed by each filter or weigher, by name; asks no
        filter why."""
        counts = collections.Counter(judge.name
                                     for _row, judge, _why in self._known)
        for host_filter, rows in self._batches:
            counts[host_filter.name] += len(rows)
        return counts

    def records(self, spec: RequestSpec) -> list[_Rejected]:
        """(host, judge's name, rejection) of every removed host, in row
        order."""
        if self._records is None:
            self._records = self._collect(spec)
        return self._records

    def reasons(self, spec: RequestSpec, table: HostTable
                ) -> collections.Counter[tuple[str, str]]:
        """Removed hosts by (filter or weigher name, reason): what a
        NoValidHost summary counts. A column form's reasons are read
        from ``table`` where its filter can (``rejection_reasons``), so
        that a full fleet builds no host state; the other batches' hosts
        are asked why (``_why``)."""
        counts = collections.Counter((judge.name, rejection.reason)
                                     for _row, judge, rejection
                                     in self._known)
        for batch, (host_filter, rows) in enumerate(self._batches):
            found = plugin_guard.reasons(host_filter, table, rows, spec)
            if found is None:
                found = [rejection.reason
                         for rejection in self._why(batch, spec)]
            for reason, hosts in collections.Counter(found).items():
                counts[host_filter.name, reason] += hosts
        return counts

    def _why(self, batch: int, spec: RequestSpec) -> list[filters.Rejection]:
        """Why the column form of ``batch`` removed each of its hosts,
        asked once whatever asks it (a NoValidHost summary, then explain
        output): a plugin's failures are counted once."""
        found = self._explained.get(batch)
        if found is None:
            host_filter, rows = self._batches[batch]
            found = self._explained[batch] = [
                rejection or filters.UNEXPLAINED
                for rejection in plugin_guard.explanations(
                    host_filter, [self._hosts[row] for row in rows.tolist()],
                    spec)]
        return found

    def _collect(self, spec: RequestSpec) -> list[_Rejected]:
        found = [(row, (self._hosts[row], judge.name, rejection))
                 for row, judge, rejection in self._known]
        for batch, (host_filter, rows) in enumerate(self._batches):
            found.extend(
                (row, (self._hosts[row], host_filter.name, rejection))
                for row, rejection in zip(rows.tolist(),
                                          self._why(batch, spec),
                                          strict=True))
        found.sort(key=lambda item: item[0])
        return [record for _row, record in found]


def result_of(record: _Rejected) -> HostResult:
    host, name, rejection = record
    return HostResult(host, name, rejection.reason, rejection.detail)


def _optional(value: float) -> float | None:
    return None if math.isnan(value) else value


def results_of(table: HostTable, weighed: Weighed, ranked: np.ndarray,
               removed: Removed, spec: RequestSpec) -> list[HostResult]:
    """Every host's fate: the candidates best first, then the removed
    hosts in table order."""
    column = {row: i for i, row in enumerate(weighed.rows.tolist())}
    terms = [(name, raw.tolist(), normalized.tolist(), multiplier,
              weighted.tolist())
             for name, raw, normalized, multiplier, weighted in weighed.terms]
    totals = weighed.totals.tolist()
    results = []
    for row in ranked.tolist():
        i = column[row]
        results.append(HostResult(
            table.hosts[row], weight=totals[i],
            weights={name: WeighedTerm(_optional(raw[i]),
                                       _optional(normalized[i]), multiplier,
                                       weighted[i])
                     for name, raw, normalized, multiplier, weighted
                     in terms}))
    results.extend(result_of(record) for record in removed.records(spec))
    return results


def cost_table(results: Sequence[HostResult]) -> str:
    """Hosts x weighers table of normalised weights, for debug logs and
    the CLI."""
    names = sorted({name for r in results for name in r.weights})
    header = ["host", *names, "total", "filtered_by"]
    rows = [header]
    for r in results:
        cells = [r.host.host]
        for name in names:
            term = r.weights.get(name)
            cells.append("-" if term is None or term.normalized is None
                         else f"{term.normalized:.3f}")
        cells.append("-" if r.weight is None else f"{r.weight:.3f}")
        cells.append(r.filtered_by or "")
        rows.append(cells)
    return text_table.render(rows)
