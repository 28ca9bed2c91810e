"""A node's last report as columns: ``HostState.metrics`` of the host
cache, a read-only ``Mapping[str, Metric]`` over them.

The host cache decodes every node's report about once a minute and keeps
the last one per node; a dict of ``Metric`` objects cost one object per
metric and report (21 objects and 1.7 KB a host of 20 metrics), built
whether a filter ever read them or not. A report is kept instead as its
``Layout`` (the metric names and sources, one object shared by every
report of the same metrics in the same order) and its values and
timestamps as columns; a ``Metric`` is built when one is read. Filters,
weighers and plugins read ``host.metrics`` as they read the dict: by
name, ``in``, iteration in report order, ``items()``, ``==``.
"""

import datetime
from array import array
from collections.abc import ItemsView
from collections.abc import Iterator
from collections.abc import KeysView
from collections.abc import Mapping
from collections.abc import Sequence
from collections.abc import ValuesView

from scheduler.hosts.metric_entries import cached_timestamp
from scheduler.hosts.metric_entries import recent_stamps
from scheduler.hosts.state import Metric


class Layout:
    """The metric names of a report, in its order, and their sources."""

    __slots__ = ("names", "positions", "sources")

    def __init__(self, names: tuple[str, ...], sources: tuple[str, ...]):
        #: One tuple object for every report of this layout, as the
        #: report history is given it (``appended_report``), which may
        #: tell by identity that it holds these names.
        self.names = names
        self.positions = {name: index for index, name in enumerate(names)}
        self.sources = sources

    def __reduce__(self) -> tuple:
        # Every pickle protocol, the oldest ones included (slots).
        return Layout, (self.names, self.sources)


#: The layouts of the reports decoded so far, by (names, sources as
#: reported). Emptied when it grows past _LAYOUTS_KEPT: a node inventing
#: names cannot grow it without bound (a report then has a layout of its
#: own, equal to the one cleared).
_LAYOUTS: dict[tuple[tuple[str, ...], tuple[str | None, ...]], Layout] = {}
_LAYOUTS_KEPT = 1024


def layout(names: tuple[str, ...], sources: tuple[str | None, ...]
           ) -> Layout | None:
    """The layout of a report's ``names`` and ``sources`` (None: no
    source), or None when a name is empty or repeated (checked when the
    layout is first seen)."""
    key = (names, sources)
    found = _LAYOUTS.get(key)
    if found is not None:
        return found
    if not all(names) or len(set(names)) != len(names):
        return None
    if len(_LAYOUTS) >= _LAYOUTS_KEPT:
        _LAYOUTS.clear()
    found = _LAYOUTS[key] = Layout(names, tuple(
        "" if source is None else source for source in sources))
    return found


#: The types of reports' values (``kinds``), one tuple per sequence of
#: them, bounded as _LAYOUTS is.
_KINDS: dict[tuple[type, ...], tuple[type, ...]] = {}


def kinds(numbers: Sequence[float]) -> tuple[type, ...]:
    """The type of each of ``numbers`` (int or float), as one tuple for
    every report of the same sequence of types."""
    found = tuple(map(type, numbers))
    if len(_KINDS) >= _LAYOUTS_KEPT:
        _KINDS.clear()
    return _KINDS.setdefault(found, found)


def stamps(texts: tuple[str, ...]
           ) -> datetime.datetime | tuple[datetime.datetime, ...] | None:
    """The ``ReportedMetrics.stamps`` of a report's timestamp ``texts``:
    one datetime when they are all the same (most reports), or None when
    one is not a date."""
    cache = recent_stamps()
    if not texts:
        return ()
    first = texts[0]
    if texts.count(first) == len(texts):
        return cache.get(first) or cached_timestamp(first, cache)
    found = tuple([cache.get(text) or cached_timestamp(text, cache)
                   for text in texts])
    return None if None in found else found


class ReportedMetrics(Mapping[str, Metric]):
    """The metrics of one report by name: ``numbers`` (the values as an
    ``array('d')``, or as reported when an int has no exact double),
    their ``kinds`` (``kinds()``: an int reported is read as an int) and
    ``stamps`` (one datetime for every metric, or one each), at the
    positions of ``layout.names``."""

    __slots__ = ("layout", "numbers", "kinds", "stamps")

    def __init__(self, layout: Layout, numbers: Sequence[float] | array,
                 kinds: tuple[type, ...],
                 stamps: datetime.datetime | Sequence[datetime.datetime]):
        self.layout = layout
        self.numbers = numbers
        self.kinds = kinds
        self.stamps = stamps

    def _metric(self, index: int) -> Metric:
        """The metric at ``index`` of the layout."""
        value, stamps = self.numbers[index], self.stamps
        return Metric(int(value) if self.kinds[index] is int else value,
                      stamps if type(stamps) is datetime.datetime
                      else stamps[index],
                      self.layout.sources[index])

    def __getitem__(self, name: str) -> Metric:
        return self._metric(self.layout.positions[name])

    def get(self, name: str, default: object = None) -> Metric | object:
        """The metric ``name``, else ``default``."""
        index = self.layout.positions.get(name)
        return default if index is None else self._metric(index)

    def copy(self) -> dict[str, Metric]:
        """A dict of the metrics, as the dict this replaced gave."""
        return dict(self.items())

    def __or__(self, other: object) -> dict[str, Metric]:
        if not isinstance(other, Mapping):
            return NotImplemented
        return {**self, **other}

    def __ror__(self, other: object) -> dict[str, Metric]:
        if not isinstance(other, Mapping):
            return NotImplemented
        return {**other, **self}

    def __reduce__(self) -> tuple:
        # Every pickle protocol, the oldest ones included (slots).
        return (ReportedMetrics,
                (self.layout, self.numbers, self.kinds, self.stamps))

    def __contains__(self, name: object) -> bool:
        return name in self.layout.positions

    def __len__(self) -> int:
        return len(self.layout.names)

    def __iter__(self) -> Iterator[str]:
        return iter(self.layout.names)

    def keys(self) -> KeysView[str]:
        """The names, in report order."""
        # The layout's dict's: set operations and == as the dict's keys.
        return self.layout.positions.keys()

    def __reversed__(self) -> Iterator[str]:
        return reversed(self.layout.names)

    def _metrics(self) -> Iterator[Metric]:
        """The metrics, in report order."""
        return map(self._metric, range(len(self.layout.names)))

    def values(self) -> ValuesView[Metric]:
        """The metrics, in report order, read a column at a time."""
        return _Values(self)

    def items(self) -> ItemsView[str, Metric]:
        """(name, metric) pairs, in report order, read a column at a
        time."""
        return _Items(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(dict(self.items()))


# The generic views, iterated a column at a time rather than by a lookup
# per name.
class _Values(ValuesView):
    """``ReportedMetrics.values()``."""

    __slots__ = ()

    def __iter__(self) -> Iterator[Metric]:
        return self._mapping._metrics()


class _Items(ItemsView):
    """``ReportedMetrics.items()``."""

    __slots__ = ()

    def __iter__(self) -> Iterator[tuple[str, Metric]]:
        mapping = self._mapping
        return zip(mapping.layout.names, mapping._metrics(), strict=True)
