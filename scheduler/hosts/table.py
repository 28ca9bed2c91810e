"""The host states as columns, for filters and weighers that judge every
host at once.

A ``HostTable`` holds NumPy columns of the hosts of one cache version
(``HostManager.host_table()``) or of a given list of hosts. Columns are
built on first use, from one function of a HostState per column, and
kept: the host manager carries the table over to its next cache version,
recomputing only the rows of hosts that changed, so a request pays for
a column once per change rather than once per host. A host whose state
the cache builds on demand (``DeferredHost``) is built for a column only
when the column's function is not light (``column_functions.light``).

Filters implement ``BaseHostFilter.passes()`` and weighers
``BaseHostWeigher.raw_column()`` on top of it. Missing values (a metric
never reported, a heartbeat never sent) are NaN.
"""

import datetime
import threading
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from scheduler.hosts import change_kinds
from scheduler.hosts.column_functions import epoch
from scheduler.hosts.column_functions import getter
from scheduler.hosts.column_functions import is_light
from scheduler.hosts.column_functions import metric_epoch
from scheduler.hosts.column_functions import metric_value
from scheduler.hosts.column_functions import with_built
from scheduler.hosts.column_functions import with_light
from scheduler.hosts.host_list import HostList

if TYPE_CHECKING:
    # The host manager keeps a table of its own: no import cycle at run
    # time.
    from scheduler.hosts.host_list import DeferredHost
    from scheduler.hosts.state import HostState

#: A column's recipe: its dtype, the value of one host, and the kinds of
#: change that can move that value (``change_kinds``).
Builder = tuple[type | str, Callable[["HostState"], object], frozenset[str]]


class HostTable:
    """Columns over ``hosts`` (in their order), built on first use."""

    def __init__(self, hosts: Iterable["HostState | DeferredHost"],
                 columns: Mapping[Hashable, tuple[np.ndarray, Builder]]
                 | None = None, name_rank: np.ndarray | None = None,
                 floors: Mapping[Hashable, tuple[float, bool]]
                 | None = None):
        self.hosts = hosts if isinstance(hosts, HostList) else HostList(
            hosts)
        self._columns: dict[Hashable, tuple[np.ndarray, Builder]] = dict(
            columns or {})
        self._name_rank = name_rank
        #: (a value at most the smallest of the column's values, NaN
        #: when one is NaN; whether it is that smallest value) of float
        #: columns, by key: see ``at_least()``.
        self._floors: dict[Hashable, tuple[float, bool]] = dict(
            floors or {})
        self._lock = threading.Lock()
        #: Kept by the host manager, under its lock, for the table it
        #: holds: whether it was handed out for good (``host_table()``)
        #: and how many ``leased_table()`` blocks read it. With neither,
        #: its next version takes its columns over (``replaced()``).
        self.handed_out = False
        self.leases = 0
        #: fresh_metric()'s results by (metric, cutoff): the filters and
        #: weighers of one decision ask for the same ones, each time a
        #: pass over every host.
        self.fresh: dict[tuple[str, datetime.datetime], np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.hosts)

    def column(self, key: Hashable, dtype: type | str,
               value: Callable[["HostState"], object],
               changed_by: frozenset[str] = change_kinds.ANY) -> np.ndarray:
        """The column ``key``: ``value(host)`` of every host, as ``dtype``.

        ``key`` must name what ``value`` computes, including every
        parameter it depends on: the column is kept under that key, and
        recomputed with ``value`` for hosts that change, but for those
        whose kind of change (``change_kinds``) is not in ``changed_by``.
        The first caller's recipe is kept: callers of one key must pass
        the same ``value`` and ``changed_by``. Read-only.
        """
        found = self._columns.get(key)
        if found is None:
            array = _build(self.hosts, dtype, value)
            with self._lock:
                found = self._columns.setdefault(
                    key, (array, (dtype, value, changed_by)))
        return found[0]

    def attribute(self, name: str, dtype: type | str = float) -> np.ndarray:
        """The column of HostState attribute (or property) ``name``."""
        return self.column(("attribute", name), dtype, getter(name),
                           change_kinds.of_attribute(name))

    def matches(self, name: str, wanted: object) -> np.ndarray:
        """Where HostState attribute ``name`` equals ``wanted``."""
        codes, values = self.codes(("attribute", name), getter(name),
                                   change_kinds.of_attribute(name))
        return by_code(codes, np.array([value == wanted for value in values],
                                       dtype=bool))

    def codes(self, key: Hashable, value: Callable[["HostState"], object],
              changed_by: frozenset[str] = change_kinds.ANY
              ) -> tuple[np.ndarray, list]:
        """``value(host)`` of every host as small integers: ``values[
        codes[i]]`` is host i's value. A check of the distinct values,
        which are few in a fleet (CPU models, zones), then stands for a
        check of every host: ``verdicts[codes]``.
        """
        codes = self.column(("codes", key), np.intp, _Interner(value),
                            changed_by)
        _array, (_dtype, interner, _kinds) = self._columns[("codes", key)]
        return codes, interner.values

    def at_least(self, key: Hashable, bound: float) -> bool:
        """Whether every value of the (built, float) column ``key`` is at
        least ``bound``, NaN being none.

        Answered from a floor of the column kept across versions: a
        version lowers it to the values of the rows it replaces, and
        when it replaces a row holding the smallest value the floor may
        lag below the new smallest one, never above. Only a lagging floor
        below ``bound`` has the column scanned for its smallest value.
        Whether every host's metric is fresh, or has room for a flavor,
        is then most of the time one comparison instead of a pass over
        every host.
        """
        floor, exact = self._floors.get(key, (np.nan, False))
        if not floor >= bound and not exact:
            found = self._columns.get(key)
            if found is None:  # handed over meanwhile: no floor to keep
                return False
            # min() of the column as it is, whatever its dtype (a
            # plugin may have built it as integers first).
            values = found[0]
            floor = float(values.min()) if len(values) else np.inf
            with self._lock:
                # Handed over and patched meanwhile: this floor may be of
                # neither version, keep none.
                if self._columns.get(key) is found:
                    self._floors[key] = (floor, True)
        return floor >= bound

    def attribute_at_least(self, name: str, bound: float) -> bool:
        """``at_least()`` of the column of HostState attribute ``name``."""
        self.attribute(name)
        return self.at_least(("attribute", name), bound)

    def name_rank(self) -> np.ndarray:
        """Each host's position in (host, nodename) order, ties in table
        order: how equal weights are broken."""
        if self._name_rank is None:
            keys = [(host.host, host.nodename) for host in self.hosts]
            order = sorted(range(len(keys)), key=keys.__getitem__)
            rank = np.empty(len(keys), dtype=np.intp)
            rank[order] = np.arange(len(keys))
            self._name_rank = rank
        return self._name_rank

    def replaced(self, rows: Mapping[int, "HostState | DeferredHost"],
                 hand_over: bool = False,
                 kinds: Mapping[int, str] | None = None) -> "HostTable":
        """A table whose hosts at the ``rows`` positions are replaced by
        hosts of the same names, its columns carried over with only those
        rows recomputed; ``kinds``: the kind of change (``change_kinds``)
        of the rows that had one, whose columns not moved by it are kept.
        A deferred host (``DeferredHost``) is built for the columns that
        are not ``light()`` only.

        ``hand_over``: nobody reads this table any more (its owner, the
        host manager, knows): its columns are patched in place and move
        to the new table instead of being copied, and this table keeps
        none (asked for one, it builds it again from its own hosts).
        Copying them was a fifth of a decision at 100,000 hosts.
        """
        hosts = self.hosts.replaced(rows)
        # Other threads may add columns to this table meanwhile.
        with self._lock:
            carried = list(self._columns.items())
            floors = dict(self._floors)
            if hand_over:
                self._columns = {}
                self._floors = {}
        columns = {}
        # The rows each set of kinds recomputes (a few sets for all the
        # columns), their positions, and whether they are few; apart for
        # the light columns, which read deferred hosts as they are.
        moving: dict[tuple[frozenset[str], bool],
                     tuple[Mapping[int, HostState], list[int], bool]] = {}
        light_rows = None  # rows as the light functions read them
        for key, (array, builder) in carried:
            _dtype, value, changed_by = builder
            light = is_light(value)
            found = moving.get((changed_by, light))
            if found is None:
                if not light:
                    # Only the hosts the column recomputes are built.
                    moved = with_built(_moved(rows, kinds, changed_by))
                else:
                    if light_rows is None:
                        light_rows = with_light(rows)
                    moved = _moved(light_rows, kinds, changed_by)
                # A claim taken into the cache replaces one host, a
                # refresh tens.
                found = moving[changed_by, light] = (
                    moved, list(moved), len(moved) <= 16)
            moved, positions, few = found
            if hand_over and not moved:
                columns[key] = (array, builder)
                continue
            if hand_over:
                array.setflags(write=True)
            else:
                array = array.copy()
            before = _values(array, positions, few) if key in floors else None
            for index, host in moved.items():
                array[index] = value(host)
            array.setflags(write=False)
            columns[key] = (array, builder)
            if before is not None:
                floors[key] = _lowered(floors[key], before,
                                       _values(array, positions, few))
        return HostTable(hosts, columns, self._name_rank, floors)


def _moved(rows: Mapping[int, "HostState"], kinds: Mapping[int, str] | None,
           changed_by: frozenset[str]) -> Mapping[int, "HostState"]:
    """The ``rows`` a column moved by ``changed_by`` recomputes: those
    without a kind of change, and those whose kind moves it."""
    if not kinds or changed_by >= change_kinds.ANY:
        return rows
    return {index: host for index, host in rows.items()
            if index not in kinds or kinds[index] in changed_by}


def _values(array: np.ndarray, positions: list[int], few: bool) -> list:
    """The values at ``positions``, read one by one when ``few``: a fancy
    index costs a few µs, for every column of every version."""
    if few:
        return [array.item(position) for position in positions]
    return array[positions].tolist()


class _Interner:
    """Numbers the distinct values of a column function, for ``codes``:
    kept with the column, so the numbering carries over to the next
    table."""

    def __init__(self, value: Callable[["HostState"], object]):
        self._value = value
        self._lock = threading.Lock()
        self._numbers: dict[Hashable, int] = {}
        #: The distinct values, by number; only ever appended to.
        self.values: list = []

    def __call__(self, host: "HostState") -> int:
        value = self._value(host)
        try:
            key: Hashable = (type(value), value)
            number = self._numbers.get(key)
        except TypeError:  # a list or a dict: equal values, equal repr
            key = ("repr", type(value), repr(value))
            number = self._numbers.get(key)
        if number is None:
            with self._lock:
                number = self._numbers.setdefault(key, len(self.values))
                if number == len(self.values):
                    self.values.append(value)
        return number


def by_code(codes: np.ndarray, verdicts: np.ndarray) -> np.ndarray:
    """``verdicts[codes]``: each host's verdict from the verdict of its
    value (``HostTable.codes``). In a fleet of one zone or one CPU model
    every value usually passes: then no pass over the hosts to find it
    out."""
    if verdicts.all():
        return np.ones(len(codes), dtype=bool)
    return verdicts[codes]


def _lowered(floor: tuple[float, bool], before: Sequence[float],
             after: Sequence[float]) -> tuple[float, bool]:
    """A column's ``floor`` (``HostTable.at_least``) once some of its
    values changed from ``before`` to ``after``."""
    low, exact = floor
    for old, new in zip(before, after, strict=True):
        if not old > low and not new <= old:
            # Maybe the smallest value, now gone: the floor may lag.
            exact = False
        if new < low:
            low = new
        elif not new >= low:  # NaN, or the floor is
            low = np.nan
    return low, exact


def _build(hosts: Sequence["HostState"], dtype: type | str,
           value: Callable[["HostState"], object]) -> np.ndarray:
    array = np.fromiter((value(host) for host in hosts), dtype=dtype,
                        count=len(hosts))
    array.flags.writeable = False
    return array


#: fresh_metric() results a table keeps (a decision needs a few).
_FRESH_KEPT = 32


def fresh_metric(table: HostTable, name: str,
                 cutoff: datetime.datetime | None) -> np.ndarray:
    """The metric's values (adjusted for pending claims), NaN where it is
    missing or was measured before ``cutoff`` (None: no age check): the
    column form of ``HostState.metric_since``."""
    # Moved by every kind of change: claims pending count in the value.
    values = table.column(("metric", name), float, metric_value(name))
    if cutoff is None:
        return values
    key = (name, cutoff)
    fresh = table.fresh.get(key)
    if fresh is None:
        measured_key = ("metric_epoch", name)
        measured = table.column(measured_key, float, metric_epoch(name),
                                change_kinds.REPORTS)
        since = epoch(cutoff)
        # Usually every host reported the metric since the cutoff: the
        # values are the fresh ones.
        if table.at_least(measured_key, since):
            fresh = values
        else:
            fresh = np.where(measured >= since, values, np.nan)
            fresh.flags.writeable = False
        if len(table.fresh) >= _FRESH_KEPT:
            table.fresh.clear()
        table.fresh[key] = fresh
    return fresh
