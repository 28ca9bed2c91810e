"""How a refresh of the host cache reads the database: the rows that
changed since the cache's watermark (or all of them), their claims and
their decoding, gathered as ``Changes`` that the cache applies only once
every query succeeded (``scheduler.hosts.cache.manager``)."""

import dataclasses
import datetime
import itertools
import operator
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from scheduler.db import api as db_api
from scheduler.db import host_queries
from scheduler.db import tables
from scheduler.db.host_queries import AllocationRow
from scheduler.db.host_queries import KeyRow
from scheduler.db.host_queries import NodeRow
from scheduler.hosts import change_kinds
from scheduler.hosts import history
from scheduler.hosts.cache import changed_rows
from scheduler.hosts.cache import decode
from scheduler.hosts.cache.build import Entry
from scheduler.hosts.cache.build import base_state
from scheduler.hosts.cache.build import build_state
from scheduler.hosts.cache.build import claims_by_node
from scheduler.hosts.cache.build import kept_row
from scheduler.hosts.cache.build import new_entry
from scheduler.hosts.cache.build import reported_host
from scheduler.hosts.cache.build import reusable_decoding
from scheduler.hosts.cache.changed_rows import KEPT
from scheduler.hosts.column_functions import attribute_epoch
from scheduler.hosts.expected_load import pending_cpu_fraction
from scheduler.hosts.table import epoch

LOG = logging.getLogger(__name__)
_ID = operator.attrgetter("id")


@dataclasses.dataclass
class Changes:
    """A refresh's result, applied to the cache only once every query
    succeeded."""

    full: bool
    entries: dict[int, Entry]
    gone: set[int]
    newest: datetime.datetime | None
    rows_read: int
    rows_fetched: int
    rows_decoded: int
    allocations_read: int
    #: The kind of change (``change_kinds``) of the entries that had one,
    #: by node id: the host table keeps their other columns.
    kinds: dict[int, str] = dataclasses.field(default_factory=dict)


class RefreshProbe(Protocol):
    """A value read with each refresh of the host cache, on its
    connection (the live policies' generation): in the refresh's own
    scan of the changed rows when it can be, so that it costs no round
    trip of its own."""

    @property
    def query(self) -> sa.ScalarSelect | None:
        """The value as a scalar subquery the scan can carry; None while
        it cannot (the probe reads it itself then)."""

    def observe(self, connection: sa.Connection) -> None:
        """Read the value with a statement of its own (a refresh without
        a scan, or the query unavailable) and act on it."""

    def observed(self, connection: sa.Connection, value: object) -> None:
        """Act on the value the scan read."""


#: Seconds between two checks of the overlap window for late changes.
WINDOW_CHECK_INTERVAL = 1.0


class RefreshReads:
    """The reads of one refresh, not yet applied: the half of
    ``HostManager`` that talks to the database (its state, ``_entries``,
    ``_watermark``, ``_table``..., is the manager's)."""

    def _read(self, full: bool, now: float, with_probes: bool,
              pace: Callable[[], None] | None = None) -> Changes:
        """One refresh's reads, not yet applied; ``with_probes``: read the
        refresh probes on its connection; ``pace``: see ``reload()``."""
        opts = self.conf.filter_scheduler
        # No pre-ping round trip on every request: a pooled connection
        # the database dropped fails the first statement instead, and the
        # refresh runs once more on a fresh one.
        engine = db_api.get_engine(self.conf, pre_ping=False)
        for attempt in (1, 2):
            try:
                # The nodes are read before their claims, in snapshots of
                # their own but on MariaDB: a claim committed in between is
                # counted under the node's older key, which the next
                # refresh finds moved.
                # On PostgreSQL in autocommit (get_engine()): no BEGIN
                # before the reads, no ROLLBACK after them.
                with engine.connect() as connection:
                    probes = list(self.refresh_probes) if with_probes else []
                    if full:
                        changes = self._read_all(connection, pace)
                    else:
                        changes = self._read_changed(
                            connection, now, opts.refresh_overlap, probes)
                    # What the scan did not read (probes is left with
                    # those), each probe reads on its own.
                    for probe in probes:
                        probe.observe(connection)
                return changes
            except sa_exc.DBAPIError as e:
                if not e.connection_invalidated or attempt == 2:
                    raise
                LOG.info("Database connection lost; refreshing the host "
                         "cache on a new one: %s", db_api.one_line(e))
        raise AssertionError("unreachable")

    def _read_all(self, connection: sa.Connection,
                  pace: Callable[[], None] | None = None) -> Changes:
        if pace is None:
            rows = host_queries.fetch(connection, host_queries.ALL_NODES,
                                      NodeRow)
            allocations = host_queries.fetch(
                connection, host_queries.ALL_ALLOCATIONS, AllocationRow)
        else:
            rows = host_queries.fetch_paced(
                connection, host_queries.ALL_NODES, NodeRow, pace)
            allocations = host_queries.fetch_paced(
                connection, host_queries.ALL_ALLOCATIONS, AllocationRow,
                pace)
        entries, decoded, _kinds = self._build_entries(
            rows, list(map(self._entries.get, map(_ID, rows))), allocations,
            reuse=True, pace=pace)
        return Changes(
            full=True, entries=entries, gone=set(),
            newest=max((row.changed_at for row in rows), default=None),
            rows_read=len(rows), rows_fetched=len(rows),
            rows_decoded=decoded, allocations_read=len(allocations))

    def _read_changed(self, connection: sa.Connection, now: float,
                      overlap: int, probes: list[RefreshProbe]
                      ) -> Changes:
        """The rows changed since the watermark; the ``probes`` whose
        value the scan read are observed and removed from the list."""
        watermark = self._watermark
        if watermark is None:
            newer: list[NodeRow] = []
            keys = host_queries.fetch(connection, host_queries.ALL_KEYS,
                                      KeyRow)
        else:
            # Rows stamped after the watermark are read whole at once:
            # they are few, and they changed. One stamped with the
            # watermark's own time is a late change, for _late_keys().
            newer, folded, probed = self._scan(connection, watermark,
                                               probes)
            for probe, value in zip(folded, probed, strict=True):
                probes.remove(probe)
                probe.observed(connection, value)
            keys = self._late_keys(connection, now, overlap, newer)
        rows, held = changed_rows.stale(self._entries, newer)
        late = [key.id for key in keys if self._is_stale(key)]
        stale = [row.id for row in rows]
        stale.extend(late)
        # Only rows that changed are read with their (large) JSON columns.
        for chunk in tables.chunks(sorted(late)):
            fetched = host_queries.fetch(
                connection, host_queries.NODES_BY_ID, NodeRow,
                ids=list(chunk))
            rows.extend(fetched)
            held.extend(self._entries.get(row.id) for row in fetched)
        kept_claims = changed_rows.claims_as_cached(rows, held)
        claimed = [node_id for node_id in stale
                   if node_id not in kept_claims]
        allocations: list[AllocationRow] = []
        for chunk in tables.chunks(claimed):
            allocations.extend(host_queries.claims_on(connection, chunk))
        entries, decoded, kinds = self._build_entries(
            rows, held, allocations, reuse=False, kept_claims=kept_claims)
        return Changes(
            full=False, entries=entries,
            # Seen by the scan, gone when read: deleted in between.
            gone=set(late) - entries.keys(),
            newest=max((row.changed_at for row in itertools.chain(
                newer, keys, rows)), default=None),
            rows_read=len(newer) + len(keys), rows_fetched=len(rows),
            rows_decoded=decoded, allocations_read=len(allocations),
            kinds=kinds)

    @staticmethod
    def _scan(connection: sa.Connection, watermark: datetime.datetime,
              probes: list[RefreshProbe]
              ) -> tuple[list[NodeRow], list[RefreshProbe], tuple]:
        """The rows stamped after ``watermark``, the probes whose query
        the scan carried and their values. A scan failing on the probes'
        queries (a table of theirs dropped: a schema downgraded under a
        running worker) runs again without them: the probes then read on
        their own, and say what fails, and the hosts are read as ever."""
        folded = [probe for probe in probes if probe.query is not None]
        try:
            newer, probed = host_queries.scan_after(
                connection, watermark, [probe.query for probe in folded])
        except sa_exc.DBAPIError as e:
            if not folded or e.connection_invalidated:
                raise
            # Any error that left the connection usable: a second one,
            # without the probes, is raised as it is.
            LOG.warning("Reading the changed hosts with %d value(s) of "
                        "their refresh failed (%s); reading them alone: %s",
                        len(folded), type(e.orig).__name__,
                        db_api.one_line(e))
            return host_queries.scan_after(connection, watermark)[0], [], ()
        return newer, folded, probed

    def _late_keys(self, connection: sa.Connection, now: float,
                   overlap: int, newer: Sequence[NodeRow]) -> list[KeyRow]:
        """The change keys of the overlap window up to the watermark
        (changes committed late, or by a writer whose clock lags), but
        only when that window's row count or generation sum differs from
        the cache's, and at most once per ``WINDOW_CHECK_INTERVAL``
        seconds. ``newer``: the rows already read, stamped after the
        watermark.

        Every writer bumps ``generation``, so a late change moves the
        sum: two numbers compared spare a scan of the window's rows (a
        sixth of the fleet at the default overlap); checked once a
        second, not at every request. A late change is seen within the
        second, and a claim is checked against the database anyway.
        """
        if (self._window_checked is not None
                and now - self._window_checked < WINDOW_CHECK_INTERVAL):
            return []
        self._window_checked = now
        watermark = self._watermark
        seen = {row.id for row in newer}
        since = watermark - datetime.timedelta(seconds=overlap)
        count, generations = connection.execute(
            host_queries.WINDOW_PROBE,
            {"since": since, "until": watermark}).one()
        if (count, generations) == self._window_fingerprint(
                since, watermark, seen):
            return []
        return [key for key in host_queries.fetch(
                    connection, host_queries.KEYS_SINCE, KeyRow, since=since)
                if key.id not in seen]

    def _window_fingerprint(self, since: datetime.datetime,
                            until: datetime.datetime,
                            moved: set[int]) -> tuple[int, int]:
        """(rows, sum of generations) the database should hold from
        ``since`` to ``until`` (both included) if nothing was committed late:
        the cached hosts changed then, but for those whose change since
        was seen (``moved``: their ids)."""
        table = self._table
        changed = table.column("changed_at", float,
                               attribute_epoch("changed_at"))
        inside = (changed >= epoch(since)) & (changed <= epoch(until))
        generations = table.attribute("generation", np.int64)
        count, total = int(inside.sum()), int(generations[inside].sum())
        for node_id in moved:
            row = self._position.get(node_id)
            if row is not None and inside[row]:
                count -= 1
                total -= int(generations[row])
        return count, total

    def _is_stale(self, key: KeyRow) -> bool:
        """Whether the cache lacks the node of the change key ``key`` or
        holds another version of it."""
        return changed_rows.is_stale(self._entries.get(key.id), key)

    def _build_entries(self, rows: Sequence[NodeRow],
                       held: Sequence[Entry | None],
                       allocations: Sequence[AllocationRow],
                       reuse: bool,
                       pace: Callable[[], None] | None = None,
                       kept_claims: Mapping[
                           int, Sequence[AllocationRow]] | None = None
                       ) -> tuple[dict[int, Entry], int, dict[int, str]]:
        """The rows' entries (``held``: the cached entry of each row), how
        many rows were decoded, and the kind of change of those a report
        alone changed (``Changes.kinds``)."""
        if not rows:  # most refreshes of a small fleet: no option read
            return {}, 0, {}
        by_node: dict[int, Sequence[AllocationRow]] = {
            **claims_by_node(allocations), **(kept_claims or {})}
        entries, kinds, decoded_rows = {}, {}, 0
        windows, ratios, pending_fraction = self._row_options()
        slice_rows = host_queries.PACE_ROWS
        # A refresh reads its reports, and adds full batches, at once.
        read = None if reuse else changed_rows.new_reports(rows, held)
        unsettled: list[history.MetricHistory] = []
        for index, row in enumerate(rows):
            if pace is not None and index % slice_rows == slice_rows - 1:
                pace()
            node_id = row.id
            claims = tuple(by_node.get(node_id, ()))
            previous = held[index]
            decoded = kept = None
            columns = read and read[index]
            if previous is not None and (reuse or columns is KEPT):
                kept = kept_row(row)
                if reuse and previous.built_from() == (kept, claims, ratios):
                    # Unchanged: the same object, so that the host table
                    # keeps its columns.
                    entries[node_id] = previous
                    continue
                # A claim or a release moved the row, not a report: its
                # decoding, and the node's history, stay.
                decoded = reusable_decoding(previous, kept)
            if decoded is None:
                decoded = decode.changed(
                    row, previous and previous.decoded, *windows,
                    None if columns is KEPT else columns, unsettled)
                decoded_rows += 1
            if kept is None:  # the decoding's key: not hashed again
                kept = kept_row(row, decoded)
            same_claims = (previous.state if kept_claims and previous
                           and node_id in kept_claims else None)
            state = same_claims and reported_host(
                row, kept, decoded, previous, ratios, pending_fraction)
            if state:
                kinds[node_id] = change_kinds.REPORT
            entries[node_id] = new_entry((
                state or build_state(
                    row, claims, decoded, ratios,
                    same_claims and base_state(same_claims),
                    pending_fraction),
                decoded, kept, claims, ratios))
        history.settle_together(unsettled)
        return entries, decoded_rows, kinds

    def _row_options(self) -> tuple[tuple[float, float],
                                    tuple[float, float, float], float]:
        """The options a row's entry is built with (history windows,
        allocation ratios, the pending claims' busy share), read once per
        refresh, not once per row: an oslo.config lookup costs about a
        microsecond, a report some tens."""
        opts = self.conf.filter_scheduler
        return ((self.conf.metrics.history_window,
                 self.conf.metrics.instance_history_window),
                (opts.cpu_allocation_ratio, opts.ram_allocation_ratio,
                 opts.disk_allocation_ratio),
                pending_cpu_fraction(self.conf))
