"""One live migration on libvirt, steered by its migration policy.

Peer-to-peer: the source's libvirtd opens the destination's
([migration_agent] destination_uri) and drives the whole move itself,
so the agent needs no connection of its own to the destination and a
move survives a restart of the agent's connection. The guest's memory
goes to [migration_agent] migration_uri (empty: the destination's
choice).

As VDSM does it for oVirt: the policy's flags (auto-converge,
compression, post-copy when its schedule may switch to it), its initial
actions before the move starts, then, read from libvirt's job
statistics every [migration_agent] poll_interval, each further memory
iteration counts as a stalled one (the first is the bulk copy; every
other means the pages dirtied meanwhile did not fit in the allowed
downtime) and fires the schedule's next item: setDowntime
(migrateSetMaxDowntime), postcopy (migrateStartPostCopy) or abort
(abortJob). Bandwidth: the share the agent gives the move, set when the
job starts.
"""

import dataclasses
import threading
import types
from collections.abc import Callable

from oslo_log import log as logging

from scheduler.policies.migration import convergence
from scheduler.policies.migration import policies as migration_policies

LOG = logging.getLogger(__name__)

COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"


@dataclasses.dataclass(frozen=True)
class Beat:
    """What the agent answers a running move's heartbeat: whether it
    still holds the move, and whether an operator cancelled it."""

    held: bool
    cancel: bool


@dataclasses.dataclass(frozen=True)
class Outcome:
    state: str
    reason: str | None = None


def migration_flags(libvirt: types.ModuleType,
                    policy: migration_policies.MigrationPolicy,
                    persistent: bool) -> int:
    """Live, peer-to-peer, and what the policy allows."""
    flags = libvirt.VIR_MIGRATE_LIVE | libvirt.VIR_MIGRATE_PEER2PEER
    if persistent:
        flags |= (libvirt.VIR_MIGRATE_PERSIST_DEST
                  | libvirt.VIR_MIGRATE_UNDEFINE_SOURCE)
    if policy.auto_convergence:
        flags |= libvirt.VIR_MIGRATE_AUTO_CONVERGE
    if policy.migration_compression:
        flags |= libvirt.VIR_MIGRATE_COMPRESSED
    if _may_postcopy(policy):
        flags |= libvirt.VIR_MIGRATE_POSTCOPY
    return flags


def _may_postcopy(policy: migration_policies.MigrationPolicy) -> bool:
    schedule = policy.schedule
    if schedule is None:
        return False
    actions = (*schedule.initial_items,
               *(item.action for item in schedule.convergence_items),
               *schedule.last_items)
    return any(a.action == migration_policies.POSTCOPY for a in actions)


def progress_percent(stats: dict) -> int | None:
    """Percent of the guest's memory sent: of the first pass, then held
    below 100 until the move ends."""
    total = stats.get("memory_total")
    remaining = stats.get("memory_remaining")
    if not total or remaining is None:
        return None
    return max(0, min(99, 100 * (total - remaining) // total))


class Mover:
    """Carries ``domain`` to ``dest_uri``; ``beat`` is called every poll
    with the progress and answers a Beat."""

    def __init__(self, libvirt: types.ModuleType, domain,
                 policy: migration_policies.MigrationPolicy, dest_uri: str,
                 migration_uri: str, poll_interval: float,
                 beat: Callable[[int | None], Beat]):
        self.libvirt = libvirt
        self.domain = domain
        self.policy = policy
        self.dest_uri = dest_uri
        self.migration_uri = migration_uri
        self.poll_interval = poll_interval
        self.beat = beat
        self.schedule = convergence.Convergence(policy)
        self._done = threading.Event()
        self._error: str | None = None
        #: Why the agent ended the job itself (Outcome), if it did.
        self._stopped: Outcome | None = None
        self._stalled = 0
        #: Whether libvirt accepted the switch to post-copy.
        self._postcopy = False

    def run(self, bandwidth_mib: int | None) -> Outcome:
        """Migrate at ``bandwidth_mib`` MiB/s (None: libvirt's default),
        steering until libvirt's job ends: the outcome the job reached,
        whatever happens to the steering."""
        beat = self.beat(0)
        # The lease is checked just before the job starts: a move whose
        # lease went meanwhile is another agent's to end, not to start.
        if not beat.held:
            return Outcome(FAILED, "this agent lost its lease before the "
                           "move started")
        if beat.cancel:
            return Outcome(CANCELLED, "cancelled by an operator")
        for action in self.schedule.initial_actions():
            self._apply(action)
        params = {}
        if self.migration_uri:
            params[self.libvirt.VIR_MIGRATE_PARAM_URI] = self.migration_uri
        if bandwidth_mib:
            params[self.libvirt.VIR_MIGRATE_PARAM_BANDWIDTH] = bandwidth_mib
        flags = migration_flags(self.libvirt, self.policy,
                                bool(self.domain.isPersistent()))
        worker = threading.Thread(target=self._migrate, args=(params, flags),
                                  name=f"migrate-{self.domain.UUIDString()}",
                                  daemon=True)
        worker.start()
        try:
            while not self._done.wait(self.poll_interval):
                self.steer()
        # Anything: an unsteered job must not run on while the move is
        # recorded as ended; the job's own end decides the outcome.
        except Exception as e:
            LOG.exception("Migration of %s: steering failed, aborting",
                          self.domain.UUIDString())
            self._stop(Outcome(FAILED, f"agent error while steering: {e}"))
        worker.join()
        return self._outcome()

    def _outcome(self) -> Outcome:
        if self._error is None:
            return Outcome(COMPLETED)
        stopped = self._stopped
        if stopped is not None and self._postcopy:
            # The guest ran on the destination already: an abort then
            # leaves it broken, never back as it was.
            return Outcome(FAILED, f"{stopped.reason} after post-copy "
                           f"started; libvirt: {self._error}")
        if stopped is not None:
            return stopped
        return Outcome(FAILED, f"libvirt: {self._error}")

    def _migrate(self, params: dict, flags: int) -> None:
        try:
            self.domain.migrateToURI3(self.dest_uri, params, flags)
        except self.libvirt.libvirtError as e:
            self._error = str(e)
        finally:
            self._done.set()

    def steer(self) -> None:
        """One poll: job statistics, heartbeat, then at most one
        convergence action (a libvirt error here means the job just
        ended: the migrate call reports how)."""
        try:
            stats = self.domain.jobStats()
        except self.libvirt.libvirtError:
            return
        beat = self.beat(progress_percent(stats))
        if self._stopped is not None:
            return
        if not beat.held:
            self._stop(Outcome(FAILED, "this agent lost its lease"))
            return
        if beat.cancel:
            self._stop(Outcome(CANCELLED, "cancelled by an operator"))
            return
        iteration = stats.get("memory_iteration") or 0
        if iteration - 1 > self._stalled:
            self._stalled = iteration - 1
            for action in self.schedule.on_stalled(self._stalled):
                self._apply(action)

    def _apply(self, action: migration_policies.Action) -> None:
        name = action.action
        LOG.info("Migration of %s: %s after %d stalled iterations",
                 self.domain.UUIDString(),
                 " ".join([name, *map(str, action.params)]), self._stalled)
        if name == migration_policies.SET_DOWNTIME:
            self._call(self.domain.migrateSetMaxDowntime, action.params[0],
                       0)
        elif name == migration_policies.POSTCOPY:
            self._postcopy = self._call(self.domain.migrateStartPostCopy, 0)
        elif name == migration_policies.ABORT:
            self._stop(Outcome(
                FAILED, f"aborted by migration policy {self.policy.id} "
                f"at stalled iteration {self._stalled}"))

    def _stop(self, outcome: Outcome) -> None:
        if self._stopped is None:
            self._stopped = outcome
        self._call(self.domain.abortJob)

    def _call(self, method: Callable, *args: object) -> bool:
        """A steering call; one that fails (the job ended meanwhile, a
        post-copy the hypervisor refuses) is logged, the move goes on.
        Whether libvirt accepted it."""
        try:
            method(*args)
        except self.libvirt.libvirtError as e:
            LOG.warning("Migration of %s: %s failed: %s",
                        self.domain.UUIDString(), method.__name__, e)
            return False
        return True
