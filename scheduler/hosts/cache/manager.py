"""The host cache of one scheduler process (``HostManager``): the host
states, refreshed from the database before each decision.

Only the rows whose ``changed_at`` moved are read again and decoded
(``scheduler.hosts.cache.reading``), and a periodic full load catches what
the incremental reads cannot see (deleted nodes). In a serving process a
background thread does the full loads (``scheduler.hosts.cache.refresher``),
off the request path.
"""

import contextlib
import dataclasses
import datetime
import threading
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence

from oslo_config import cfg

from scheduler.common import heap
from scheduler.common import observability
from scheduler.db import models
from scheduler.db.host_queries import AllocationRow
from scheduler.hosts import change_kinds
from scheduler.hosts.cache import refresher as host_cache_refresher
from scheduler.hosts.cache.build import ClaimedUsage
from scheduler.hosts.cache.build import Entry
from scheduler.hosts.cache.build import ReportedHost
from scheduler.hosts.cache.build import claimed_state
from scheduler.hosts.cache.reading import Changes
from scheduler.hosts.cache.reading import RefreshProbe
from scheduler.hosts.cache.reading import RefreshReads
from scheduler.hosts.host_list import built
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable


@dataclasses.dataclass(frozen=True)
class RefreshStats:
    """What one refresh of the host cache did (benchmarks, logs)."""

    #: True for a load of every row, False for an incremental refresh.
    full: bool
    #: Wall time of the refresh, in seconds.
    duration: float
    #: compute_nodes rows returned by the scan (ids and change keys only,
    #: for an incremental refresh).
    rows_read: int
    #: Rows read with all their columns because they changed (or all of
    #: them, for a full load).
    rows_fetched: int
    #: Rows whose JSON columns were parsed.
    rows_decoded: int
    allocations_read: int
    #: Hosts in the cache afterwards.
    hosts: int


def _order_key(entry: Entry) -> tuple[str, str, int]:
    row = entry.row
    return row.host, row.hypervisor_hostname, row.id


class HostManager(RefreshReads):
    """The host states of this process, refreshed incrementally.

    ``host_states()`` refreshes the cache, then returns it. The first call
    and every ``[filter_scheduler] full_refresh_interval`` seconds load
    every row, which is also how deleted nodes leave the cache. In between
    a refresh scans the ids and change keys ``(changed_at, generation)``
    of the rows changed since ``refresh_overlap`` seconds before the
    newest change seen (the watermark), then reads in full, with their
    claims, only the rows whose key differs from the cached one. Every
    writer of a row sets ``changed_at``, so a claim or a metrics report is
    seen by the next refresh.

    Thread-safe: refreshes are serialised, and a caller that waited for
    another thread's refresh which started after its own call uses that
    refresh's result. Cached HostState objects are replaced, never changed,
    by a refresh (the state of a report-only change is built when first
    read: ``build.ReportedHost``); they are shared between threads, so
    callers must not change them: see ``snapshot()``.

    ``clock`` (monotonic seconds) decides when a full load is due; tests
    inject a fake one.

    A serving process calls ``start_background_refresh()``: a daemon
    thread (``host_cache_refresher``) then does the first load and the
    periodic full loads, reading outside the lock and swapping the result
    in (``reload()``), so that no request waits for one; requests only
    refresh incrementally. A request that arrives before the first load
    completed waits for it, as it would have done the load itself; when
    no table could be loaded yet, it loads on its own, failing as above.
    Deleted nodes leave the cache with the next background load. Without
    the thread (commands, tests, simulations) the cache behaves as
    described above.
    """

    def __init__(self, conf: cfg.ConfigOpts,
                 clock: Callable[[], float] = time.monotonic):
        self.conf = conf
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[int, Entry] = {}
        self._position: dict[int, int] = {}
        self._table = HostTable([])
        self._watermark: datetime.datetime | None = None
        self._last_full: float | None = None
        self._window_checked: float | None = None
        self._started = 0
        self._completed = 0
        self._refresher: host_cache_refresher.Refresher | None = None
        #: Ids of the nodes the cache took in while a background full load
        #: read the table (None when none does): see ``_swap_in()``.
        self._touched: set[int] | None = None
        #: Counters of the last successful refresh, None before the first.
        self.last_refresh: RefreshStats | None = None
        #: Values read with each refresh, on its connection and in its
        #: scan when they can be (the live policies' generation), so that
        #: they cost no connection or round trip of their own.
        self.refresh_probes: list[RefreshProbe] = []

    def start_background_refresh(self) -> None:
        """Leave full loads, the first included, to a daemon thread of
        this process (``host_cache_refresher``); requests then only read
        what changed. Call it in the process that serves (after a fork:
        threads do not survive one); ``close()`` stops the thread."""
        if not (self._refresher and self._refresher.alive):
            self._refresher = host_cache_refresher.Refresher(self)
            self._refresher.start()

    def close(self) -> None:
        """Stop the background refresher, if any; the cache stays usable
        and does its full loads on the request path again."""
        if self._refresher is not None:
            self._refresher.stop()
            self._refresher = None

    def host_table(self, now: float | None = None) -> HostTable:
        """``host_states()`` as a HostTable, whose columns carry over from
        one refresh to the next (recomputed for the hosts that changed).
        Shared by every thread; treat it as read-only. Its columns are
        never changed (the next version copies them): ``leased_table()``
        spares that copy."""
        self.host_states(now)
        with self._lock:
            table = self._table
            table.handed_out = True
        return table

    @contextlib.contextmanager
    def leased_table(self, now: float | None = None
                     ) -> Iterator[HostTable]:
        """``host_table()`` for the duration of the ``with`` block: the
        next version may take over its columns once the block is left
        (and no other lease holds it), instead of copying them. A
        decision reads the table only while it decides."""
        self.host_states(now)
        with self._lock:
            table = self._table
            table.leases += 1
        try:
            yield table
        finally:
            with self._lock:
                table.leases -= 1

    def host_states(self, now: float | None = None) -> Sequence[HostState]:
        """Refresh the cache and return every host, ordered by host and
        nodename.

        ``now`` is a reading of the manager's clock (default: read it).
        Returns the shared cached objects, in the host table's own
        ``HostList`` (a copy of 100,000 hosts per request cost a
        millisecond): change neither; copy the hosts with
        ``snapshot()`` before calling ``consume()``. A database error
        propagates as raised (SQLAlchemyError) and leaves the cache as it
        was; the next call tries again.
        """
        ticket = self._started
        with self._lock:
            if self._completed > ticket:
                return self._table.hosts
            self._started += 1
            started = self._started
            self._refresh(self._clock() if now is None else now)
            self._completed = started
            return self._table.hosts

    def claims_on(self, node_ids: Iterable[int]
                  ) -> dict[int, tuple[AllocationRow, ...]]:
        """The claims on these nodes as the cache last read them, by node
        id (nodes it does not hold are absent): each with its
        ``instance_uuid``, ``vcpus``, ``memory_mb``, ``disk_gb`` and
        ``instance_group``. Call ``host_states()`` first for fresh ones."""
        with self._lock:
            entries = self._entries
            return {node_id: entries[node_id].claims
                    for node_id in node_ids if node_id in entries}

    def record_claim(self, claim: ClaimedUsage) -> bool:
        """Take a claim this process just made into the cache, as the next
        refresh would read it; True when done.

        Done only when the claim is the node's one change since the cache
        read it (the claim moved its generation from the cached one to
        ``claim.generation``) and the cache does not count it yet (a
        refresh may have read the node before the claim and its claims
        after); otherwise the next refresh reads the node as usual. The
        refresh then still reads the node's row, stamped after its
        watermark, but finds the change key as cached: it reads no
        claims, decodes nothing and rebuilds nothing. A claim without a
        generation (one the call that returned it did not make) is not
        taken in.
        """
        generation, changed_at = claim.generation, claim.changed_at
        if generation is None or changed_at is None:
            return False
        with self._lock:
            entry = self._entries.get(claim.node_id)
            if entry is None or entry.row.generation != generation - 1:
                return False
            state = built(entry.state)  # taken in on the state
            if claim.instance_uuid in state.instances:
                return False
            row, allocations, ratios = entry.built_from()
            row = row._replace(generation=generation, changed_at=changed_at)
            taken = AllocationRow(
                claim.node_id, claim.instance_uuid, claim.vcpus,
                claim.memory_mb, claim.disk_gb, claim.group, changed_at)
            entry = Entry(
                claimed_state(state, taken, generation),
                entry.decoded, row, (*allocations, taken), ratios)
            # As a refresh that read only this node would; the watermark
            # stays, so that the next refresh reads what changed since.
            self._apply(Changes(
                full=False, entries={claim.node_id: entry}, gone=set(),
                newest=None, rows_read=0, rows_fetched=0, rows_decoded=0,
                allocations_read=0, kinds={claim.node_id: change_kinds.CLAIM}))
            return True

    def _refresh(self, now: float) -> None:
        opts = self.conf.filter_scheduler
        # With a background refresher running, full loads after the first
        # are its job: a request only reads what changed.
        full = self._last_full is None or (
            not (self._refresher and self._refresher.alive)
            and now - self._last_full >= opts.full_refresh_interval)
        began = time.perf_counter()
        changes = self._read(full, now, with_probes=True)
        self._apply(changes)
        if full:
            # A full load reads the overlap window too.
            self._last_full = self._window_checked = now
            heap.release_free_memory()  # the load's temporaries
        self._refreshed(changes, began)

    def _refreshed(self, changes: Changes, began: float) -> None:
        self.last_refresh = RefreshStats(
            full=changes.full, duration=time.perf_counter() - began,
            rows_read=changes.rows_read, rows_fetched=changes.rows_fetched,
            rows_decoded=changes.rows_decoded,
            allocations_read=changes.allocations_read,
            hosts=len(self._table))
        observability.metrics().refreshed(
            changes.full, self.last_refresh.duration, changes.rows_fetched)

    def reload(self, pace: Callable[[], None] | None = None) -> None:
        """Load every row without holding up requests, then swap the
        result in, keeping what requests took in meanwhile (the
        background refresher's full load). ``pace()`` is called between
        slices of the work. Errors propagate; the cache stays as it was."""
        now, began = self._clock(), time.perf_counter()
        with self._lock:
            self._touched, known = set(), set(self._entries)
        try:
            changes = self._read(True, now, with_probes=False, pace=pace)
            # Outside the lock, so that the swap holds it for the changed
            # rows only: what differs from the cache the read began with
            # (what requests changed since is in _touched).
            diff = {node_id: entry for node_id, entry
                    in changes.entries.items()
                    if self._entries.get(node_id) is not entry}
            gone = known - changes.entries.keys()
        except BaseException:
            with self._lock:
                self._touched = None
            raise
        with self._lock:
            touched, self._touched = self._touched or set(), None
            for node_id in touched:
                current = self._entries.get(node_id)
                diff.pop(node_id, None)
                # Taken in during the read: possibly newer than the load,
                # never older than the state the watermark vouches for.
                # Cached before the read yet missing from it: deleted.
                if current is not None and (node_id in changes.entries
                                            or node_id not in known):
                    gone.discard(node_id)
                else:
                    gone.add(node_id)
            newest = changes.newest
            if touched and self._watermark is not None:
                # A kept entry may predate changes the load saw: the
                # watermark stays, so that the next refresh reads them.
                newest = None
            else:
                self._window_checked = now
            # Kinds read outside the lock would be of an older cache.
            self._apply(dataclasses.replace(
                changes, full=False, entries=diff, gone=gone, newest=newest,
                kinds={}))
            self._last_full = now
            self._refreshed(changes, began)
        heap.release_free_memory()  # the load's and the replaced entries

    def _apply(self, changes: Changes) -> None:
        if self._touched is not None:
            self._touched.update(changes.entries.keys(), changes.gone)
        # A full load's entries are the whole table: what is not in them
        # is gone.
        gone = (self._entries.keys() - changes.entries.keys()
                if changes.full else changes.gone)
        reorder = False
        replaced: dict[int, HostState | ReportedHost] = {}
        entries, position = self._entries, self._position
        for node_id, entry in changes.entries.items():
            old = entries.get(node_id)
            if old is entry:
                continue
            entries[node_id] = entry
            if reorder:
                continue
            # _order_key() compared inline: a report changes neither name,
            # and this runs for every changed row.
            row, old_row = entry.row, old and old.row
            if (old_row is None or row.host != old_row.host or
                    row.hypervisor_hostname != old_row.hypervisor_hostname):
                reorder = True
            else:
                replaced[position[node_id]] = entry.state
        for node_id in gone:
            if self._entries.pop(node_id, None) is not None:
                reorder = True
        if reorder:
            ordered = sorted(self._entries.values(), key=_order_key)
            self._position = {entry.row.id: index for index, entry
                              in enumerate(ordered)}
            self._table = HostTable(entry.state for entry in ordered)
        elif replaced:
            table = self._table
            kinds = {position[node_id]: kind
                     for node_id, kind in changes.kinds.items()}
            self._table = table.replaced(
                replaced, hand_over=not (table.leases or table.handed_out),
                kinds=kinds)
        self._advance_watermark(changes.newest)

    def _advance_watermark(self, newest: datetime.datetime | None) -> None:
        if newest is None:
            return
        if self._watermark is not None:
            newest = max(newest, self._watermark)
        # A writer whose clock runs ahead must not push the watermark past
        # the changes of the others: never beyond our own clock. Rows
        # stamped in the future are then scanned again, not decoded again.
        self._watermark = min(newest, models.utcnow())
