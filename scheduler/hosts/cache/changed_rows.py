"""What a refresh's changed rows are to the host cache, sorted out once
per row: which it holds at another change key, which a metrics report
alone changed (their claims are the cached ones), and which hold a
report it has not read (``scheduler.hosts.cache.reading``)."""

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence

from scheduler.db.host_queries import AllocationRow
from scheduler.db.host_queries import KeyRow
from scheduler.db.host_queries import NodeRow
from scheduler.hosts.cache import decode
from scheduler.hosts.cache import report_columns
from scheduler.hosts.cache.build import Entry

#: A row whose report the cache holds decoded (``new_reports``).
KEPT = object()


def stale(entries: Mapping[int, Entry], rows: Iterable[NodeRow]
          ) -> tuple[list[NodeRow], list[Entry | None]]:
    """The ``rows`` whose node ``entries`` (the cache's) lack or hold at
    another change key (a scanned row is its own key), and the entry of
    each (None: lacked): looked up once, for the refresh's every step."""
    found = entries.get
    rows_stale: list[NodeRow] = []
    held: list[Entry | None] = []
    for row in rows:
        entry = found(row.id)
        if is_stale(entry, row):
            rows_stale.append(row)
            held.append(entry)
    return rows_stale, held


def is_stale(entry: Entry | None, key: KeyRow | NodeRow) -> bool:
    """Whether ``entry`` (the cache's, None: none) is of another version
    of the node than the change key ``key`` (a scanned row is its own)."""
    if entry is None:
        return True
    cached = entry.row
    return (cached.changed_at != key.changed_at
            or cached.generation != key.generation)


def claims_as_cached(rows: Iterable[NodeRow], held: Iterable[Entry | None]
                     ) -> dict[int, tuple[AllocationRow, ...]]:
    """The cached claims of the ``rows`` whose one change since the cache
    read them (``held``: its entry of each) was a metrics report, by node
    id.

    Every writer of a node bumps its generation by one, and only a
    report moves ``metrics_updated_at`` (to the ``changed_at`` it
    writes); claims and releases leave it. A row one generation on, with
    a new report stamped at its change time, was therefore changed by
    that report alone, and its claims are still those cached: most
    changes are reports (one per node and monitor interval), and a
    node's claims are most of what its refresh reads.
    """
    kept = {}
    for row, entry in zip(rows, held, strict=True):
        if entry is None:
            continue
        # The row the cached state was built from (its key fields as the
        # state holds them): a deferred state stays unbuilt.
        cached = entry.row
        reported = row.metrics_updated_at
        if (row.generation == cached.generation + 1
                and reported is not None
                and reported == row.changed_at
                and reported != cached.metrics_updated_at):
            kept[row.id] = entry.claims
    return kept


def new_reports(rows: Sequence[NodeRow],
                held: Sequence[Entry | None]) -> list:
    """``refresh_columns`` of the rows' reports the cache has not read
    (new metrics texts; ``held``: the cached entry of each row), by
    position; ``KEPT`` for the others."""
    new = [index for index, (row, entry) in enumerate(zip(
               rows, held, strict=True))
           if entry is None
           or entry.decoded.metrics_key != decode.metrics_key(row.metrics)]
    read = [KEPT] * len(rows)
    for index, columns in zip(new, report_columns.refresh_columns(
            [rows[index].metrics for index in new]), strict=True):
        read[index] = columns
    return read
