"""Claiming a decision's candidates: the one placer that the manager's
requests and the balance planner's migrations both go through.

``Placer.claim_first`` claims the chosen host, else the alternates in
order, and keeps three things in step with each claim:

* the host cache: a claim made is taken into it at once
  (``HostManager.record_claim``), so that the next decision sees it
  without reading the node again;
* the caller's list of claims made, including one whose commit may have
  been lost with the connection, so that ``roll_back`` undoes them all
  and nothing half-claimed remains;
* deferred releases: an existing claim is handed out only once no
  release that a failed request left pending may free it
  (``take_over``), and a release the database refuses is retried in the
  background (``claims.DeferredReleases``).
"""

import dataclasses
import uuid
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence

from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from scheduler import claims
from scheduler.claims.journal import ReleaseJournal
from scheduler.claims.journal import journal_directory
from scheduler.db import api as db_api
from scheduler.hosts.cache.manager import HostManager
from scheduler.hosts.state import HostState
from scheduler.placement.stats import ManagerStats

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Wanted:
    """What ``Placer.claim_first`` claims: ``usage`` for ``consumer`` (an
    instance, a planned migration) in server ``group``, named
    ``allocation_id`` (else a new uuid per attempt)."""

    consumer: str
    usage: claims.Usage
    group: str | None = None
    allocation_id: str | None = None


class Placer:
    """Claims candidates in ``store`` for consumers (instances, planned
    migrations), recording them in ``host_manager``'s cache; failed
    releases go to ``deferred_releases``.

    Thread-safe as its parts are: callers keep per-request state (the
    claims made, the hosts found full) in their own lists. ``stats``
    arguments count into a manager's counters; None counts nothing.
    """

    def __init__(self, store: claims.Claims,
                 deferred_releases: claims.DeferredReleases,
                 host_manager: HostManager):
        self.claims = store
        self.deferred_releases = deferred_releases
        self.host_manager = host_manager

    @classmethod
    def for_conf(cls, conf: cfg.ConfigOpts,
                 host_manager: HostManager) -> "Placer":
        """A placer over the database of ``conf``, whose releases that
        fail are also kept on disk until done (``ReleaseJournal``)."""
        store = claims.Claims(conf)
        return cls(store, claims.DeferredReleases(
            store, journal=ReleaseJournal(journal_directory(conf))),
            host_manager)

    def claim_first(self, candidates: Sequence[HostState], wanted: Wanted,
                    made: list[claims.Claim], *,
                    taken: list[HostState] | None = None,
                    before_each: Callable[[], None] | None = None,
                    stats: ManagerStats | None = None
                    ) -> tuple[int, claims.Claim] | None:
        """Claim ``wanted`` on the first candidate that takes it; ``(its
        index, the claim)``, or None when every one was full. The claim
        may be one the consumer held already (``existing``), on any
        node.

        A claim made is appended to ``made``, and so is the one a
        database error may have applied unseen (then re-raised): the
        caller rolls ``made`` back when it gives up. Each candidate found
        full is appended to ``taken``. ``before_each`` runs before each
        attempt (the cluster lock's hold deadline).
        """
        usage = wanted.usage
        for index, host in enumerate(candidates):
            if before_each is not None:
                before_each()
            allocation = wanted.allocation_id or str(uuid.uuid4())
            try:
                claim = self._claim_kept(host.node_id, wanted, allocation)
            except claims.ClaimConflict as e:
                if stats is not None:
                    stats.add(conflicts=1)
                if taken is not None:
                    taken.append(host)
                LOG.debug("%s; trying the next candidate", e)
                continue
            except sa_exc.SQLAlchemyError:
                # The connection may have dropped after the database
                # applied the claim: roll it back with the others, which
                # releases it if it exists (later, if the database is
                # away), so that nothing half-claimed remains.
                made.append(claims.Claim(
                    allocation, wanted.consumer, host.node_id, host.uuid,
                    host.host, host.nodename, usage.vcpus, usage.memory_mb,
                    usage.disk_gb))
                raise
            self._made(claim, made, stats)
            return index, claim
        return None

    def _made(self, claim: claims.Claim, made: list[claims.Claim],
              stats: ManagerStats | None) -> None:
        """Count a claim, keep it for a rollback and take it into the
        host cache."""
        if claim.existing:
            if stats is not None:
                stats.add(idempotent=1)
        else:
            made.append(claim)
            if stats is not None:
                stats.add(claims=1)
        # A claim the call made carries the node's generation and the
        # group; an existing one has no generation and is left out.
        self.host_manager.record_claim(claim)

    def _claim_kept(self, node_id: int, wanted: Wanted,
                    allocation_id: str) -> claims.Claim:
        """``Claims.claim``, but an existing claim of the consumer is
        taken over (``take_over``), and one freed by a background release
        while it was looked up is not handed out: the node is claimed
        anew (a failed request's claim, released as its retry found
        it)."""
        while True:
            claim = self.claims.claim(node_id, wanted.consumer, wanted.usage,
                                      group=wanted.group,
                                      allocation_id=allocation_id)
            if not claim.existing or self.take_over(claim):
                return claim
            LOG.info("Claim %s of instance %s was released in the "
                     "background as it was found; claiming again",
                     claim.allocation_id, wanted.consumer)

    def take_over(self, claim: claims.Claim) -> bool:
        """Hand out an existing claim of an instance: no release that a
        failed request of it left pending, here or in another worker, may
        free it afterwards. False when it was freed already."""
        return (self.deferred_releases.cancel(claim.allocation_id)
                and self.claims.keep(claim))

    def held(self, consumers: Iterable[str]) -> dict[str, claims.Claim]:
        """The claims these consumers hold, taken over (``take_over``);
        a claim released in the background meanwhile is not held."""
        found = self.claims.find(consumers)
        return {consumer: claim for consumer, claim in found.items()
                if self.take_over(claim)}

    def roll_back(self, made: Sequence[claims.Claim],
                  stats: ManagerStats | None = None) -> None:
        """Release the claims made, newest first; a release the database
        refuses is retried in the background until it succeeds."""
        for claim in reversed(made):
            try:
                self.claims.release_allocation(claim.allocation_id)
            except Exception as e:
                # Whatever failed, the remaining claims are still undone.
                LOG.error("Could not release claim %s of instance %s on "
                          "%s after a failed request (%s); retrying in the "
                          "background", claim.allocation_id,
                          claim.instance_uuid, claim.host,
                          db_api.one_line(e))
                self.deferred_releases.add(claim)
            else:
                if stats is not None:
                    stats.add(rolled_back=1)
