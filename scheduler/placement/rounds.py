"""One request's placement: decide, claim, decide again.

``RequestPlacement.place`` decides where each instance of a request goes
and claims each one's chosen host, else its alternates in order
(``Placer.claim_first``). When every candidate of an instance was taken
by concurrent schedulers, the cache is refreshed and the remaining
instances decided again, up to ``[scheduler] max_claim_rounds`` times.

An instance that already holds a claim gets it back, never a second one.
Its claim is found when the insert of a new one hits the unique
``instance_uuid``, or, when the decision found no room (the instance's
own claims may be what fills the fleet), by a lookup after which the
instances still without a claim are placed again. The common path thus
pays no lookup. Whatever goes wrong, the claims this placement made are
released before the error leaves it.
"""

import dataclasses
from collections.abc import Callable
from collections.abc import Sequence

from scheduler import claims
from scheduler import exception
from scheduler.common import observability
from scheduler.engine import filter_scheduler
from scheduler.hosts.cache.manager import HostManager
from scheduler.hosts.state import HostState
from scheduler.placement import entries as entries_mod
from scheduler.placement.errors import LockHoldTimeout
from scheduler.placement.placer import Placer
from scheduler.placement.placer import Wanted
from scheduler.placement.stats import ManagerStats
from scheduler.request.spec import RequestSpec


def pending_in_cluster(hosts: Sequence[HostState],
                       cluster: str | None) -> bool:
    """Whether claims not yet reflected in metrics exist in the cluster
    (``[scheduler] pending_retry_timeout`` waits for them)."""
    return any((h.vcpus_pending or h.memory_mb_pending)
               for h in hosts if cluster is None or h.cluster == cluster)


@dataclasses.dataclass
class RequestPlacement:
    """The placement of one validated request (one attempt of it).

    ``spec`` serves every decision round (each decides on its own
    ``CycleState``), ``scheduler`` is its cluster policy's. ``uuids`` are
    the instances; ``anonymous`` when the caller gave none (each is then
    claimed under its own uuid as allocation id).
    ``check_hold`` raises once the cluster lock was held too long.
    ``waits_for_pending``: whether a request that fits nowhere waits for
    pending claims (``[scheduler] pending_retry_timeout``); only then is
    a ``NoValidHost`` told whether the cluster holds some, which reads
    every host's state.
    """

    placer: Placer
    host_manager: HostManager
    scheduler: filter_scheduler.FilterScheduler
    spec: RequestSpec
    stats: ManagerStats
    max_rounds: int
    uuids: list[str]
    anonymous: bool
    report: observability.DecisionReport
    check_hold: Callable[[], None]
    waits_for_pending: bool = False
    #: Reply entries by instance, as they are claimed (or found held).
    entries: dict[str, list[dict]] = dataclasses.field(default_factory=dict)
    #: The claims this placement made: what a failure rolls back.
    made: list[claims.Claim] = dataclasses.field(default_factory=list)
    #: Candidates found full by a claim, oldest first.
    taken: list[HostState] = dataclasses.field(default_factory=list)

    def place(self, return_alternates: bool) -> list[list[dict]]:
        """One list of entries per instance: the claimed host, then (when
        ``return_alternates``) the alternates. Raises NoValidHost when an
        instance fits nowhere; nothing this call claimed remains then."""
        try:
            try:
                self._claim_all()
            except LockHoldTimeout:
                raise
            except exception.NoValidHost:
                # Existing claims are looked up only now, off the common
                # path: a retried request for instances holding claims
                # gets them back through the unique instance_uuid when
                # its claims are inserted, and here when the fleet
                # looked full (its own claims may be what fills it).
                if self.anonymous or not self._held():
                    raise
                self._claim_all()
        except BaseException:
            # Nothing half-claimed: undo this call's claims (never those
            # the instances held before it) whatever went wrong.
            self.placer.roll_back(self.made, self.stats)
            raise
        if not return_alternates:
            return [self.entries[u][:1] for u in self.uuids]
        return [self.entries[u] for u in self.uuids]

    def _held(self) -> bool:
        """Add the claims some instances still without an entry hold;
        False when there are none."""
        held = self.placer.held([u for u in self.uuids
                                 if u not in self.entries])
        for instance, claim in held.items():
            self.entries[instance] = [entries_mod.claim_entry(claim, None)]
        self.stats.add(idempotent=len(held))
        return bool(held)

    def _claim_all(self) -> None:
        """Decide and claim for every instance without an entry; raises
        NoValidHost when one fits nowhere or loses every round."""
        todo = [u for u in self.uuids if u not in self.entries]
        for round_number in range(1, self.max_rounds + 1):
            if not todo:
                return
            self.check_hold()
            if round_number > 1:
                self.stats.add(redecisions=1)
            decisions = self._decide(todo)
            for instance, decision in zip(todo, decisions, strict=True):
                entry = self._claim_one(instance, decision)
                if entry is None:
                    break  # decide again for this one and the rest
                self.entries[instance] = entry
            todo = [u for u in todo if u not in self.entries]
        if todo:
            raise exception.NoValidHost(
                f"{len(todo)} instance(s) could not be claimed in "
                f"{self.max_rounds} decision round(s): every candidate was "
                f"filled by concurrent requests first (last ones: "
                f"{', '.join(h.host for h in self.taken[-5:])})")

    def _decide(self, todo: list[str]
                ) -> list[filter_scheduler.Decision]:
        # The scheduler refreshes the host cache itself; after a
        # conflict, the refresh reads the nodes whose claims beat ours
        # (their generation moved), unless those committed late.
        hosts = self._hosts_not_known_full()
        try:
            # Validated once, at the front of the request.
            decisions = self.scheduler.select_valid(self.spec, hosts, todo)
        except exception.NoValidHost as e:
            known = hosts or self.host_manager.host_states()
            self.report.candidates, self.report.hosts = 0, len(known)
            if self.waits_for_pending:
                e.pending = pending_in_cluster(known, self.spec.cluster)
            raise
        self.report.candidates = decisions[-1].candidates
        self.report.hosts = decisions[-1].hosts
        return decisions

    def _hosts_not_known_full(self) -> list[HostState] | None:
        """None (every host, from the scheduler's own cache) until a claim
        of this request conflicted; then the cached hosts but those found
        full whose cache entry has not changed since.

        A claim committed with a change time older than the cache's
        watermark reaches the cache only at its next overlap-window check;
        until then the cache would offer the same full node again and
        again, round after round.
        """
        if not self.taken:
            return None
        # As cached when its claim conflicted.
        full = {host.node_id: host.generation for host in self.taken}
        hosts = self.host_manager.host_states()
        fresh = [host for host in hosts
                 if full.get(host.node_id, -1) != host.generation]
        return fresh or hosts

    def _claim_one(self, instance: str, decision: filter_scheduler.Decision
                   ) -> list[dict] | None:
        """Claim the chosen host, else the alternates in order; the
        instance's reply entries, or None when every candidate was
        full."""
        flavor = self.spec.flavor
        usage = claims.Usage(flavor.vcpus, flavor.memory_mb, flavor.disk_gb)
        wanted = Wanted(instance, usage, self.spec.group,
                        allocation_id=instance if self.anonymous else None)
        found = self.placer.claim_first(
            decision.selected, wanted, self.made, taken=self.taken,
            before_each=self.check_hold, stats=self.stats)
        if found is None:
            return None
        index, claim = found
        # An existing claim may be on a later candidate: it is not its
        # own alternate.
        return [entries_mod.claim_entry(claim, decision)] + [
            entries_mod.host_entry(h, decision)
            for h in decision.selected[index + 1:]
            if h.node_id != claim.node_id]
