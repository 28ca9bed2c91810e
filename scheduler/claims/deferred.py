"""Claims a failed request could not release, released in the background
once the database takes them (``DeferredReleases``), and the journal
records that keep them on disk across restarts."""

import collections
import dataclasses
import datetime
import threading

import tenacity
from oslo_log import log as logging

from scheduler.claims.journal import ReleaseJournal
from scheduler.claims.store import Claims
from scheduler.claims.types import Claim
from scheduler.db import api as db_api
from scheduler.db import models

# The logger of the module this came from: log lines and logging
# configuration stay as they were.
LOG = logging.getLogger("scheduler.claims")


#: The Claim fields a journal record holds, and their types.
_RECORD_FIELDS = {"allocation_id": str, "instance_uuid": str, "node_id": int,
                  "node_uuid": str, "host": str, "nodename": str,
                  "vcpus": int, "memory_mb": int, "disk_gb": int}


def _record(claim: Claim) -> dict:
    """A claim awaiting release as the journal keeps it."""
    record = {name: getattr(claim, name) for name in _RECORD_FIELDS}
    if claim.deferred_at is not None:
        record["deferred_at"] = claim.deferred_at.isoformat()
    return record


def _from_record(record: dict) -> Claim:
    """The claim of a journal record; ValueError naming what is wrong."""
    record = dict(record)
    # Records of earlier versions have no deferred_at: released as then.
    deferred = record.pop("deferred_at", None)
    if set(record) != set(_RECORD_FIELDS):
        raise ValueError(f"a record has the fields {sorted(record)}, "
                         f"expected {sorted(_RECORD_FIELDS)}")
    for name, kind in _RECORD_FIELDS.items():
        if not isinstance(record[name], kind) or isinstance(
                record[name], bool):
            raise ValueError(f"{name} {record[name]!r} is not of type "
                             f"{kind.__name__}")
    if deferred is not None:
        if not isinstance(deferred, str):
            raise ValueError(f"deferred_at {deferred!r} is not a string")
        deferred = datetime.datetime.fromisoformat(deferred)
    return Claim(**record, deferred_at=deferred)


#: Released allocation ids a DeferredReleases remembers: far more than a
#: retried request can lag behind its release.
_RELEASED_IDS_KEPT = 4096


class DeferredReleases:
    """Claims a failed request could not undo (the database was
    unreachable), released by a background thread that retries every
    ``interval`` seconds, doubling up to ``max_interval``, until the
    database takes each release; so that nothing half-claimed remains
    once the database is back.

    ``cancel`` takes a claim back, for a retried request of the same
    instance that is answered with it meanwhile (in this process only).
    With a ``journal`` the pending claims are also kept on disk, and
    ``adopt_orphans`` takes over those a stopped process left
    (``scheduler.claims.journal``).
    """

    def __init__(self, store: Claims, interval: float = 0.5,
                 max_interval: float = 10.0,
                 journal: ReleaseJournal | None = None):
        self.store = store
        self.interval = interval
        self.max_interval = max_interval
        self.journal = journal
        self._pending: dict[str, Claim] = {}
        self._changed = threading.Condition()
        # Held while a release runs, so that cancel() waits for it.
        self._releasing = threading.Lock()
        self._thread: threading.Thread | None = None
        # The claim the thread is releasing (its failures are logged).
        self._releasing_claim: Claim | None = None
        #: Claims released by the background thread.
        self.released = 0
        # Allocation ids the thread released lately, so that cancel()
        # can tell "released under you" from "never pending here".
        self._released_ids: collections.OrderedDict[str, None] = \
            collections.OrderedDict()

    def add(self, claim: Claim) -> None:
        if claim.deferred_at is None:
            claim = dataclasses.replace(claim, deferred_at=models.utcnow())
        with self._changed:
            self._pending[claim.allocation_id] = claim
            self._save()
            self._pending_changed()

    def adopt_orphans(self) -> int:
        """Take over the claims awaiting release that stopped processes
        left in the journal; returns how many."""
        if self.journal is None:
            return 0

        def keep(records: list[dict]) -> None:
            adopted = {claim.allocation_id: claim for claim
                       in map(_from_record, records)}
            with self._changed:
                before = dict(self._pending)
                self._pending.update(adopted)
                if not self._save():
                    # Left to the orphan's files rather than kept in
                    # memory only.
                    self._pending = before
                    raise OSError(f"{self.journal.path} could not be "
                                  "written")
                self._pending_changed()

        count = self.journal.adopt(keep)
        if count:
            LOG.info("Releasing %d claim(s) that a stopped scheduler "
                     "process left awaiting release", count)
        return count

    def _save(self) -> bool:
        # Holding _changed. False: the journal could not be written.
        if self.journal is None:
            return True
        return self.journal.save([_record(claim)
                                  for claim in self._pending.values()])

    def _pending_changed(self) -> None:
        # Holding _changed: the releasing thread runs while something is
        # pending, and waiters see the change.
        if self._pending and (self._thread is None
                              or not self._thread.is_alive()):
            self._thread = threading.Thread(
                target=self._run, daemon=True, name="claim-releases")
            self._thread.start()
        self._changed.notify_all()

    def cancel(self, allocation_id: str) -> bool:
        """Keep that claim after all, if it still exists: False when this
        process released it (the release may have run while the caller
        looked the claim up, or while this call waited for it), so that
        the caller must not hand it out; True otherwise, pending here or
        not."""
        with self._releasing, self._changed:
            if self._pending.pop(allocation_id, None) is None:
                return allocation_id not in self._released_ids
            self._save()
            self._pending_changed()
            return True

    def pending(self) -> list[Claim]:
        with self._changed:
            return list(self._pending.values())

    def wait_until_done(self, timeout: float) -> bool:
        """True once nothing is pending (tests, shutdown)."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._pending,
                                          timeout)

    def _still_pending(self, claim: Claim) -> bool:
        with self._changed:
            return claim.allocation_id in self._pending

    def _run(self) -> None:
        # The thread: one tenacity loop per claim released, so that the
        # wait starts again at ``interval`` after each release that
        # succeeds; it ends once nothing is pending.
        while True:
            claim = self._retrying()(self._release_next)
            if claim is None:
                return
            self._released_one(claim)

    def _retrying(self) -> tenacity.Retrying:
        return tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(Exception),
            # ``interval``, then doubling up to ``max_interval`` (a first
            # ``interval`` above it is waited as it is).
            wait=tenacity.wait_chain(
                tenacity.wait_fixed(self.interval),
                tenacity.wait_exponential(multiplier=self.interval,
                                          max=self.max_interval)),
            sleep=self._wait, before_sleep=self._log_failure)

    def _release_next(self) -> Claim | None:
        """Release the first pending claim and return it; None when
        nothing is pending (the thread ends). A failed release raises."""
        while True:
            with self._changed:
                if not self._pending:
                    self._thread = None
                    return None
                claim = next(iter(self._pending.values()))
            with self._releasing:
                if not self._still_pending(claim):
                    continue
                self._releasing_claim = claim
                self.store.release_allocation(claim.allocation_id,
                                              claim.deferred_at)
            return claim

    def _log_failure(self, state: tenacity.RetryCallState) -> None:
        LOG.debug("Release of claim %s still failing (%s); next try in "
                  "%g s", self._releasing_claim.allocation_id,
                  db_api.one_line(state.outcome.exception()),
                  state.next_action.sleep)

    def _wait(self, seconds: float) -> None:
        # Cut short by a change (a claim added or taken back).
        with self._changed:
            self._changed.wait(seconds)

    def _released_one(self, claim: Claim) -> None:
        with self._changed:
            self._released_ids[claim.allocation_id] = None
            while len(self._released_ids) > _RELEASED_IDS_KEPT:
                self._released_ids.popitem(last=False)
            if self._pending.pop(claim.allocation_id, None) is not None:
                self.released += 1
                LOG.info("Released claim %s of instance %s on %s, left "
                         "by a request that failed on a database "
                         "error", claim.allocation_id,
                         claim.instance_uuid, claim.host)
                self._save()
            self._changed.notify_all()
