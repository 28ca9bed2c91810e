"""A report's metrics list read into columns: its layout (names and
sources), its values as doubles, their types and its timestamps, as a
``reported.ReportedMetrics``; one report at a time (``columns``), or the
reports of a refresh at once (``refresh_columns``).

Only well-formed reports are read here; ``decode`` reads the others entry
by entry, and says what is wrong with them.
"""

import sys
from array import array
from collections.abc import Sequence

import msgspec

from scheduler.hosts import reported
from scheduler.hosts.metric_entries import cached_timestamp
from scheduler.hosts.metric_entries import recent_stamps

#: (the report's metrics, their values as doubles for the history,
#: whether the report holds instance entries)
Columns = tuple[reported.ReportedMetrics, array, bool]


class Entry(msgspec.Struct, gc=False):
    """A metrics entry of the form a report's entries normally have."""

    name: str
    value: int | float
    timestamp: str
    source: str | None = None
    #: Present (whatever its value) on an instance's entry.
    instance: object = msgspec.UNSET


read_entries = msgspec.json.Decoder(list[Entry]).decode
_UNSET = msgspec.UNSET
_LARGEST = sys.float_info.max


#: Ints a double holds exactly, whatever else they are: those of at most
#: 53 bits.
_EXACT_INT = 2 ** 53


def _small_ints(numbers: Sequence, kinds: tuple[type, ...], width: int
                ) -> bool:
    """Whether every int of ``numbers`` (rows of ``width`` values, of the
    types ``kinds``) has at most 53 bits, so that its double is exact: a
    few passes in C over the int columns, where comparing every value
    with its double makes a float object of each."""
    for column, kind in enumerate(kinds):
        if kind is int:
            values = numbers[column::width]
            if min(values) < -_EXACT_INT or max(values) > _EXACT_INT:
                return False
    return True


def _exact(floats: array, numbers: Sequence, kinds: tuple[type, ...],
           width: int) -> bool:
    """Whether ``floats`` hold ``numbers`` (rows of ``width`` values, of
    the types ``kinds``) exactly: every int does when none is past 53
    bits, else each value is compared with its double (int == float
    compares exactly)."""
    return (int not in kinds or _small_ints(numbers, kinds, width)
            or floats.tolist() == list(numbers))


def columns(text: str, instance_found: list[Entry] | None = None
            ) -> Columns | None:
    """The columns of a report whose every entry is well formed, or None.
    The instance entries, unchecked, go to ``instance_found`` when given
    (for the instance history).

    Every node's report is read at every change (one a minute per node):
    msgspec checks the entries' shape while it parses, at half of what
    parsing then checking each entry in Python costs, and the metrics are
    read a column at a time.
    """
    try:
        entries = read_entries(text)
    except (msgspec.DecodeError, TypeError):
        return None
    return _entries_columns(entries, instance_found)


def _entries_columns(entries: list[Entry],
                     instance_found: list[Entry] | None
                     ) -> Columns | None:
    """``columns`` of a report's parsed ``entries``."""
    unset = _UNSET
    # One pass over the entries, then the columns (zip in C).
    host = [(entry.name, entry.source, entry.value, entry.timestamp)
            for entry in entries if entry.instance is unset]
    instances = len(host) < len(entries)
    if instance_found is not None and instances:
        instance_found.extend(entry for entry in entries
                              if entry.instance is not unset)
    names, sources, numbers, texts = (zip(*host, strict=True) if host
                                      else ((),) * 4)
    layout = reported.layout(names, sources)
    if layout is None:
        return None
    try:
        # msgspec refuses floats past the range (JSON has no NaN): only
        # ints can be out of range. array() refuses those that round
        # past it; those rounding to the largest double are checked.
        floats = array("d", numbers)
    except OverflowError:
        return None
    kinds = reported.kinds(numbers)
    # Doubles, with no object per value, unless an int is past the
    # doubles' exact ints (int == float compares exactly). Exact ints
    # are in range: only an inexact one can have rounded to the largest.
    exact = _exact(floats, numbers, kinds, len(kinds))
    if not exact and _LARGEST in map(abs, floats) and not all(
            -_LARGEST <= number <= _LARGEST for number in numbers):
        return None
    stamps = reported.stamps(texts)
    if stamps is None:
        return None
    metrics = reported.ReportedMetrics(
        layout, floats if exact else numbers, kinds, stamps)
    return metrics, floats, instances


#: Reports read at once at most: a refresh of most of a large fleet (an
#: empty cache, a database back after an outage) holds their parsed
#: entries and columns a chunk at a time.
_CHUNK = 1024


def refresh_columns(texts: Sequence[str]) -> list[Columns | None]:
    """``columns`` of the reports ``texts`` (a refresh's changed rows),
    by position; None for those left to ``decode``: a text that does not
    parse as entries, and a report holding instance entries (an agent
    older than schema revision 0007: ``decode`` collects them for the
    instance history).

    Reports alike (the same metrics, sources and value types as each
    other, whose values are doubles or ints a double holds exactly and
    whose entries share one timestamp each: what one kind of agent
    writes) are read at once: their columns gathered over all of them,
    a pass per column, and checked with a comparison each, where
    ``columns`` makes a tuple per entry and a pass per report (a third
    of a report's read, most of it what is not the parse). The others
    are read one by one from the same parse.
    """
    found: list[Columns | None] = []
    for start in range(0, len(texts), _CHUNK):
        found.extend(_chunk_columns(texts[start:start + _CHUNK]))
    return found


def _chunk_columns(texts: Sequence[str]) -> list[Columns | None]:
    """``refresh_columns`` of at most ``_CHUNK`` reports."""
    found: list[Columns | None] = [None] * len(texts)
    parsed: list[list[Entry]] = []
    positions: list[int] = []
    for position, text in enumerate(texts):
        try:
            parsed.append(read_entries(text))
        except (msgspec.DecodeError, TypeError):
            continue
        positions.append(position)
    if parsed and not _read_alike(parsed, positions, found):
        parsed, positions = _read_by_kind(parsed, positions, found)
    for entries, position in zip(parsed, positions, strict=True):
        if found[position] is None:
            # Not parsed again by ``decode``, but for the rare reports
            # it reads entry by entry.
            found[position] = _entries_columns(entries, None)
    return found


def _read_by_kind(parsed: list[list[Entry]], positions: list[int],
                  found: list[Columns | None]
                  ) -> tuple[list[list[Entry]], list[int]]:
    """``refresh_columns`` of reports of several kinds of agent: each
    kind at once. Returns the reports still to be read one by one (with
    their positions): not those holding instance entries, which
    ``decode`` reads, to collect them for the instance history."""
    groups: dict[tuple, tuple[list, list]] = {}
    for entries, position in zip(parsed, positions, strict=True):
        kind = tuple((entry.name, entry.source, type(entry.value),
                      entry.instance is _UNSET) for entry in entries)
        if all(of_host for *_, of_host in kind):
            group = groups.setdefault(kind, ([], []))
            group[0].append(entries)
            group[1].append(position)
    for alike, at in groups.values():
        if len(alike) > 1:
            _read_alike(alike, at, found)
    return ([entries for alike, _ in groups.values() for entries in alike],
            [position for _, at in groups.values() for position in at])


def _read_alike(parsed: list[list[Entry]], positions: list[int],
                found: list[Columns | None]) -> bool:
    """``refresh_columns`` of reports expected alike (their entries at
    ``positions`` of ``found``); False when they are not."""
    width = len(parsed[0])
    count = len(parsed)
    if not width or list(map(len, parsed)) != [width] * count:
        return False
    flat = [entry for entries in parsed for entry in entries]
    names = [entry.name for entry in flat]
    sources = [entry.source for entry in flat]
    first_names, first_sources = names[:width], sources[:width]
    if (names != first_names * count or sources != first_sources * count
            or [entry.instance for entry in flat].count(_UNSET) != len(flat)):
        return False
    layout = reported.layout(tuple(first_names), tuple(first_sources))
    numbers = [entry.value for entry in flat]
    kinds = reported.kinds(numbers[:width])
    if layout is None or list(map(type, numbers)) != list(kinds) * count:
        return False
    try:
        floats = array("d", numbers)
    except OverflowError:
        return False
    # A report with an int without an exact double, or with times of
    # its own per metric (one per monitor plugin), is read one by one.
    exact = _exact(floats, numbers, kinds, width)
    texts = [entry.timestamp for entry in flat]
    firsts = texts[::width]
    uniform = all(texts[column::width] == firsts
                  for column in range(1, width))
    cache = recent_stamps()
    new = reported.ReportedMetrics
    for row, (position, text) in enumerate(
            zip(positions, firsts, strict=True)):
        start = row * width
        end = start + width
        if not uniform and texts[start:end].count(text) < width:
            continue
        if not exact and floats[start:end].tolist() != numbers[start:end]:
            continue
        stamp = cache.get(text) or cached_timestamp(text, cache)
        if stamp is not None:
            values = floats[start:end]
            found[position] = (new(layout, values, kinds, stamp), values,
                               False)
    return True
