"""The scheduler's operations, independent of how they are called.

The RPC endpoint (scheduler/rpc/server.py), the demo and the tests call a
``SchedulerManager``; it validates the request spec against the published
JSON schema, runs the filter scheduler and claims the chosen hosts in the
database so that concurrent schedulers never double-book a host.

``select_destinations`` in order:

1. Validation, before anything else: ``request_spec`` against
   ``scheduler/schemas/request_spec.json`` (Draft 2020-12),
   ``instance_uuids`` against its ``$defs/instance_uuids``, then the
   extra specs and hints the filters parse. Errors are InvalidRequest
   naming the field: ``request_spec.flavor.vcpus: 'two' is not of type
   'integer'``.
2. With ``[scheduler] cluster_lock``, the rest runs holding the database
   lock ``cluster:<cluster or ->``.
3. Refresh the host cache, decide, and claim each instance's chosen
   host, else its alternates in order (``scheduler.claims``). When all of
   an instance's candidates were taken by concurrent schedulers, the
   cache is refreshed and the remaining instances decided again, up to
   ``[scheduler] max_claim_rounds`` times.
4. Idempotency: an instance that already holds a claim gets it back,
   never a second one. Its claim is found when the insert of a new one
   hits the unique ``instance_uuid``, or, when the decision found no
   room (the instance's own claims may be what fills the fleet), by a
   lookup after which the instances still without a claim are placed
   again. The common path thus pays no lookup.
5. If an instance fits nowhere, the claims this call made are released
   before NoValidHost is raised (a release the database refuses is
   retried in the background until it succeeds, and kept on disk
   meanwhile in case the service stops first:
   ``claims.DeferredReleases``); with ``[scheduler]
   pending_retry_timeout`` and pending claims in the cluster, the whole
   request is first retried until the timeout.
"""

import contextlib
import functools
import time
import uuid
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import TypeVar

from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from scheduler import claims
from scheduler import cluster_policy
from scheduler import exception
from scheduler import filter_scheduler
from scheduler import host_manager as hm
from scheduler import observability
from scheduler.balancer.planner import BalancePlanner
from scheduler.counters import ManagerStats
from scheduler.db import api as db_api
from scheduler.db import locks
from scheduler.live_policies import LivePolicies
from scheduler.release_journal import ReleaseJournal
from scheduler.release_journal import journal_directory
from scheduler.request.schema import request_spec_schema  # noqa: F401
from scheduler.request.validation import _checkers  # noqa: F401
from scheduler.request.validation import check_instance_uuid
from scheduler.request.validation import validate_request
from scheduler.request_spec import RequestSpec

LOG = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Seconds between the attempts of a request waiting for pending claims
#: (``[scheduler] pending_retry_timeout``).
PENDING_POLL_INTERVAL = 0.5

class LockHoldTimeout(exception.NoValidHost):
    """A scheduling pass held the cluster lock past ``[scheduler]
    lock_hold_timeout``; it stopped, released its claims and the lock.

    A NoValidHost, so that it reaches RPC callers as the "could not
    place" answer they already handle, with its own message.
    """


class _Unplaceable(Exception):
    """An instance of the request fits nowhere (internal)."""

    def __init__(self, summary: str, pending: bool):
        self.summary = summary
        #: Pending claims existed in the request's cluster.
        self.pending = pending
        super().__init__(summary)


# The manager


def _weight(decision: filter_scheduler.Decision,
            node_id: int) -> float | None:
    """The node's weight in the decision, None when it was not a
    candidate."""
    weights = getattr(decision, "selected_weights", None)
    if weights and len(weights) == len(decision.selected):
        for host, weight in zip(decision.selected, weights, strict=True):
            if host.node_id == node_id:
                return weight
        return None
    # Candidates come first in results, so this stops after a few hosts.
    for result in decision.results:
        if result.host.node_id == node_id:
            return result.weight
    return None


def _host_entry(host: hm.HostState,
                decision: filter_scheduler.Decision) -> dict:
    return {"host": host.host, "nodename": host.nodename, "uuid": host.uuid,
            "weight": _weight(decision, host.node_id),
            "allocation_id": None}


def _claim_entry(claim: claims.Claim,
                 decision: filter_scheduler.Decision | None) -> dict:
    return {"host": claim.host, "nodename": claim.nodename,
            "uuid": claim.node_uuid,
            "weight": (None if decision is None
                       else _weight(decision, claim.node_id)),
            "allocation_id": claim.allocation_id}


def _pending_in_cluster(hosts: Sequence[hm.HostState],
                        cluster: str | None) -> bool:
    return any((h.vcpus_pending or h.memory_mb_pending)
               for h in hosts if cluster is None or h.cluster == cluster)


class SchedulerManager:
    """select_destinations / explain / release over one database.

    Thread-safe: one manager serves every RPC thread of a worker process;
    the filter schedulers and their host cache are shared, each call works
    on its own request objects and database connections.

    A request's ``cluster`` picks the filter scheduler: that of the
    cluster's policy (``[scheduler] cluster_policies``, else
    ``default_policy``), or ``scheduler`` for ``[filter_scheduler]``.
    ``scheduler`` may be given (tests: a seeded random generator); by
    default one is built from ``conf``.
    """

    def __init__(self, conf: cfg.ConfigOpts,
                 scheduler: filter_scheduler.FilterScheduler | None = None):
        self.conf = conf
        self.scheduler = scheduler or filter_scheduler.FilterScheduler(conf)
        self.host_manager = self.scheduler.host_manager
        self.policies = cluster_policy.load_policies(conf)
        schedulers = self.policies.schedulers(conf, self.host_manager)
        schedulers[None] = self.scheduler
        # The policies in use and their schedulers, swapped as one by
        # _use_policies so that a request never sees one without the other.
        self._active = (self.policies, schedulers)
        #: Plans balancing migrations (``balance()``, the periodic task).
        self.planner = BalancePlanner(conf, self.host_manager,
                                      self.policies)
        # Policies the REST API stores: read with each host refresh.
        self.live_policies = LivePolicies(conf, self.policies,
                                          self._use_policies)
        self.host_manager.refresh_hooks.append(self.live_policies.observe)
        self.claims = claims.Claims(conf)
        self.deferred_releases = claims.DeferredReleases(
            self.claims, journal=ReleaseJournal(journal_directory(conf)))
        self.stats = ManagerStats()

    # select_destinations

    def select_destinations(self, request_spec: dict,
                            instance_uuids: list[str] | None = None,
                            return_alternates: bool = False
                            ) -> list[list[dict]]:
        """``_select_destinations``, counted in the metrics and logged on
        one INFO line (``observability.DecisionReport``)."""
        report = observability.DecisionReport()
        try:
            selections = self._select_destinations(
                request_spec, instance_uuids, return_alternates, report)
        except exception.NoValidHost as e:
            report.finish("no_valid_host", detail=("summary", str(e)))
            raise
        except exception.InvalidRequest as e:
            report.finish("invalid_request", detail=("error", str(e)))
            raise
        except Exception as e:
            report.finish("error", detail=(
                "error", f"{type(e).__name__}: {db_api.one_line(e)}"))
            raise
        report.finish("placed", chosen=[str(entries[0]["host"])
                                        for entries in selections])
        return selections

    def _select_destinations(self, request_spec: dict,
                             instance_uuids: list[str] | None,
                             return_alternates: bool,
                             report: observability.DecisionReport
                             ) -> list[list[dict]]:
        """One list per instance: the claimed host, then (when
        ``return_alternates``) up to ``max_attempts - 1`` alternates.

        Each entry is ``{"host", "nodename", "uuid", "weight",
        "allocation_id"}`` (allocation_id None for alternates). Raises
        InvalidRequest naming the field for a malformed spec, NoValidHost
        with the filter histogram when an instance does not fit.

        ``uuid`` is the compute node's uuid. An instance that already
        holds a claim gets it back (same allocation_id and host); its
        weight and alternates come from this call's decision, or are
        None and absent when no decision placed it. Without
        ``instance_uuids`` each instance is claimed under a new uuid equal
        to its allocation_id, which is then what ``release`` takes.
        Database errors raise ``claims.DatabaseError`` after the claims
        of this call were released; lock waits past ``[scheduler]
        lock_acquire_timeout`` raise ``locks.LockTimeout``.
        """
        spec_dict, uuids = validate_request(request_spec, instance_uuids)
        anonymous = not uuids
        if anonymous:
            uuids = [str(uuid.uuid4())
                     for _ in range(spec_dict["num_instances"])]
        # Extra specs and hints are checked before anything is locked or
        # claimed; the spec is then reused by the first decision.
        spec = self._spec(spec_dict, uuids)
        report.instances = len(uuids)
        report.cluster = spec.cluster
        policy = self.policies.for_cluster(spec.cluster)
        report.policy = None if policy is None else policy.label
        self._scheduler(spec).validate(spec)
        self.stats.add(requests=1)
        opts = self.conf.scheduler
        deadline = time.monotonic() + opts.pending_retry_timeout
        while True:
            try:
                with self._database_errors("select_destinations"):
                    return self._serialised(
                        spec_dict.get("cluster"),
                        functools.partial(self._place, spec_dict, spec,
                                          uuids, anonymous,
                                          return_alternates, report))
            except _Unplaceable as e:
                left = deadline - time.monotonic()
                if not e.pending or left <= 0:
                    self.stats.add(no_valid_host=1)
                    raise exception.NoValidHost(e.summary) from None
                LOG.info("No host for %s yet, but pending claims exist in "
                         "cluster %s; retrying for up to %.1f s more: %s",
                         spec.flavor.name or "request",
                         spec.cluster or "(any)", left, e.summary)
                self.stats.add(pending_waits=1)
                time.sleep(min(PENDING_POLL_INTERVAL, left))
                spec = self._spec(spec_dict, uuids)
            except exception.NoValidHost:
                self.stats.add(no_valid_host=1)
                raise

    def _spec(self, spec_dict: dict,
              uuids: list[str] | None = None) -> RequestSpec:
        if uuids:
            spec_dict = {**spec_dict, "num_instances": len(uuids)}
        return RequestSpec.from_dict(
            spec_dict, scope=self.conf.metrics.extra_specs_scope,
            instance_uuids=uuids)

    def _serialised(self, cluster: str | None,
                    run: Callable[[float | None], _T]) -> _T:
        """``run(hold_deadline)``, under the cluster lock when
        ``[scheduler] cluster_lock`` is set."""
        opts = self.conf.scheduler
        if not opts.cluster_lock:
            return run(None)
        name = f"cluster:{cluster or '-'}"
        with locks.database_lock(db_api.get_engine(self.conf), name,
                                 opts.lock_acquire_timeout):
            started = time.monotonic()
            limit = opts.lock_hold_timeout
            result = run(started + limit if limit > 0 else None)
            held = time.monotonic() - started
            if 0 < limit < held:
                LOG.warning("Scheduling pass held lock %s for %.1f s, more "
                            "than [scheduler] lock_hold_timeout (%g s); "
                            "its last step had already started, so it kept "
                            "its claims", name, held, limit)
            return result

    def _check_hold(self, hold_deadline: float | None,
                    cluster: str | None) -> None:
        if hold_deadline is None or time.monotonic() <= hold_deadline:
            return
        limit = self.conf.scheduler.lock_hold_timeout
        name = f"cluster:{cluster or '-'}"
        LOG.warning("Scheduling pass held lock %s for more than "
                    "[scheduler] lock_hold_timeout (%g s); stopping it, "
                    "releasing its claims and the lock", name, limit)
        raise LockHoldTimeout(
            f"scheduling in {name} took longer than [scheduler] "
            f"lock_hold_timeout ({limit:g} s); nothing was claimed, "
            "try again")

    def _place(self, spec_dict: dict, first_spec: RequestSpec,
               uuids: list[str], anonymous: bool, return_alternates: bool,
               report: observability.DecisionReport,
               hold_deadline: float | None) -> list[list[dict]]:
        entries: dict[str, list[dict]] = {}
        made: list[claims.Claim] = []
        try:
            try:
                self._claim_all(spec_dict, first_spec, uuids, anonymous,
                                hold_deadline, entries, made, report)
            except _Unplaceable:
                # Existing claims are looked up only now, off the common
                # path: a retried request for instances holding claims
                # gets them back through the unique instance_uuid when
                # its claims are inserted, and here when the fleet
                # looked full (its own claims may be what fills it).
                if anonymous or not self._held(uuids, entries):
                    raise
                self._claim_all(spec_dict, None, uuids, anonymous,
                                hold_deadline, entries, made, report)
        except BaseException:
            # Nothing half-claimed: undo this call's claims (never those
            # the instances held before it) whatever went wrong.
            self._roll_back(made)
            raise
        if not return_alternates:
            return [entries[u][:1] for u in uuids]
        return [entries[u] for u in uuids]

    def _held(self, uuids: list[str],
              entries: dict[str, list[dict]]) -> bool:
        """Add the claims some instances still without an entry hold;
        False when there are none."""
        held = self.claims.find([u for u in uuids if u not in entries])
        # A claim released in the background meanwhile is not held.
        held = {instance: claim for instance, claim in held.items()
                if self._take_over(claim)}
        for instance, claim in held.items():
            entries[instance] = [_claim_entry(claim, None)]
        self.stats.add(idempotent=len(held))
        return bool(held)

    def _claim_all(self, spec_dict: dict, first_spec: RequestSpec | None,
                   uuids: list[str], anonymous: bool,
                   hold_deadline: float | None,
                   entries: dict[str, list[dict]],
                   made: list[claims.Claim],
                   report: observability.DecisionReport) -> None:
        """Decide and claim for every instance without an entry; raises
        _Unplaceable when one fits nowhere or loses every round."""
        rounds = self.conf.scheduler.max_claim_rounds
        todo = [u for u in uuids if u not in entries]
        taken: list[hm.HostState] = []
        for round_number in range(1, rounds + 1):
            if not todo:
                return
            self._check_hold(hold_deadline, spec_dict.get("cluster"))
            if round_number > 1:
                self.stats.add(redecisions=1)
            # The validated spec serves the first decision; later ones
            # need a fresh one (select() records group members in it).
            spec = (first_spec if first_spec is not None
                    and round_number == 1 else self._spec(spec_dict, todo))
            # The scheduler refreshes the host cache itself; after a
            # conflict, the refresh reads the nodes whose claims beat ours
            # (their generation moved), unless those committed late.
            hosts = self._hosts_not_known_full(taken)
            try:
                decisions = self._scheduler(spec).select(spec, hosts)
            except exception.NoValidHost as e:
                known = hosts or self.host_manager.host_states()
                report.candidates, report.hosts = 0, len(known)
                raise _Unplaceable(str(e), _pending_in_cluster(
                    known, spec.cluster)) from None
            report.candidates = decisions[-1].candidates
            report.hosts = decisions[-1].hosts
            for instance, decision in zip(todo, decisions, strict=True):
                entry = self._claim_one(spec, instance, decision, anonymous,
                                        hold_deadline, made, taken)
                if entry is None:
                    break  # decide again for this one and the rest
                entries[instance] = entry
            todo = [u for u in todo if u not in entries]
        if todo:
            raise _Unplaceable(
                f"{len(todo)} instance(s) could not be claimed in "
                f"{rounds} decision round(s): every candidate was filled "
                f"by concurrent requests first (last ones: "
                f"{', '.join(h.host for h in taken[-5:])})", pending=False)

    def _hosts_not_known_full(self, taken: list[hm.HostState]
                              ) -> list[hm.HostState] | None:
        """None (every host, from the scheduler's own cache) until a claim
        of this request conflicted; then the cached hosts but those found
        full whose cache entry has not changed since.

        A claim committed with a change time older than the cache's
        watermark reaches the cache only at its next overlap-window check;
        until then the cache would offer the same full node again and
        again, round after round.
        """
        if not taken:
            return None
        # As cached when its claim conflicted.
        full = {host.node_id: host.generation for host in taken}
        hosts = self.host_manager.host_states()
        fresh = [host for host in hosts
                 if full.get(host.node_id, -1) != host.generation]
        return fresh or hosts

    def _claim_one(self, spec: RequestSpec, instance: str,
                   decision: filter_scheduler.Decision, anonymous: bool,
                   hold_deadline: float | None, made: list[claims.Claim],
                   taken: list[hm.HostState]) -> list[dict] | None:
        """Claim the chosen host, else the alternates in order; the
        instance's reply entries, or None when every candidate was
        full."""
        flavor = spec.flavor
        usage = claims.Usage(flavor.vcpus, flavor.memory_mb,
                             flavor.disk_gb)
        for index, host in enumerate(decision.selected):
            self._check_hold(hold_deadline, spec.cluster)
            allocation_id = instance if anonymous else str(uuid.uuid4())
            try:
                claim = self._claim_kept(host.node_id, instance, usage,
                                         spec.group, allocation_id)
            except claims.ClaimConflict as e:
                self.stats.add(conflicts=1)
                taken.append(host)
                LOG.debug("%s; trying the next candidate", e)
                continue
            except sa_exc.SQLAlchemyError:
                # The connection may have dropped after the database
                # applied the claim: roll it back with the others, which
                # releases it if it exists (later, if the database is
                # away), so that nothing half-claimed remains.
                made.append(claims.Claim(
                    allocation_id, instance, host.node_id, host.uuid,
                    host.host, host.nodename, usage.vcpus, usage.memory_mb,
                    usage.disk_gb))
                raise
            if claim.existing:
                self.stats.add(idempotent=1)
            else:
                made.append(claim)
                self.stats.add(claims=1)
            if claim.generation is not None:
                self.host_manager.record_claim(
                    claim.node_id, claim.generation, claim.changed_at,
                    instance, usage.vcpus, usage.memory_mb,
                    usage.disk_gb, spec.group)
            # An existing claim may be on a later candidate: it is not
            # its own alternate.
            return [_claim_entry(claim, decision)] + [
                _host_entry(h, decision)
                for h in decision.selected[index + 1:]
                if h.node_id != claim.node_id]
        return None

    def _claim_kept(self, node_id: int, instance: str, usage: claims.Usage,
                    group: str | None, allocation_id: str) -> claims.Claim:
        """``Claims.claim``, but an existing claim of the instance is
        taken over (``_take_over``), and one freed by a background release
        while it was looked up is not handed out: the node is claimed
        anew (a failed request's claim, released as its retry found
        it)."""
        while True:
            claim = self.claims.claim(node_id, instance, usage, group=group,
                                      allocation_id=allocation_id)
            if not claim.existing or self._take_over(claim):
                return claim
            LOG.info("Claim %s of instance %s was released in the "
                     "background as it was found; claiming again",
                     claim.allocation_id, instance)

    def _take_over(self, claim: claims.Claim) -> bool:
        """Hand out an existing claim of an instance: no release that a
        failed request of it left pending, here or in another worker, may
        free it afterwards. False when it was freed already."""
        return (self.deferred_releases.cancel(claim.allocation_id)
                and self.claims.keep(claim))

    def _roll_back(self, made: list[claims.Claim]) -> None:
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
                self.stats.add(rolled_back=1)

    @contextlib.contextmanager
    def _database_errors(self, operation: str) -> Iterator[None]:
        try:
            yield
        except sa_exc.SQLAlchemyError as e:
            hint = ("the database is unreachable, try again later"
                    if db_api.is_retriable(e) else "the request was rolled "
                    "back")
            raise claims.DatabaseError(
                f"{operation} failed on a database error ({hint}): "
                f"{db_api.one_line(e)}") from e

    # explain / release

    def explain(self, request_spec: dict) -> dict:
        """The decision for one instance without claiming (DESIGN §7
        JSON form: selected, summary, hosts)."""
        spec_dict, _ = validate_request(request_spec)
        spec = self._spec(spec_dict)
        policies, _ = self._active
        with self._database_errors("explain"):
            result = self._scheduler(spec).explain(spec).as_dict()
        # Which policy decided, with the version of an API-stored one.
        policy = policies.for_cluster(spec.cluster)
        result["policy"] = None if policy is None else policy.label
        return result

    def _scheduler(self, spec: RequestSpec
                   ) -> filter_scheduler.FilterScheduler:
        """The filter scheduler of the request's cluster policy."""
        policies, schedulers = self._active
        return schedulers[policies.name_for(spec.cluster)]

    def _use_policies(self, policies: cluster_policy.PolicySet) -> None:
        """Put the live PolicySet in use: new filter schedulers for new
        or changed policies only, then one swap."""
        old_policies, old = self._active
        schedulers = {None: self.scheduler}
        for name, policy in policies.policies.items():
            if old_policies.policies.get(name) == policy and name in old:
                schedulers[name] = old[name]
            else:
                schedulers[name] = filter_scheduler.FilterScheduler(
                    self.conf, host_manager=self.host_manager,
                    pipeline=policy.pipeline())
        self._active = (policies, schedulers)
        self.policies = policies
        self.planner.use_policies(policies)

    # balance

    def balance(self, cluster: str | None = None, dry_run: bool = False,
                migration_policy: str | None = None) -> list[dict]:
        """One balancing tick now (``BalancePlanner.balance``): the
        migrations planned, at most one per cluster, or that would be
        when ``dry_run``; ``migration_policy`` overrides the clusters'
        migration policy."""
        with self._database_errors("balance"):
            return [migration.as_dict() for migration in self.planner.balance(
                cluster, dry_run, migration_policy=migration_policy)]

    def resume_releases(self) -> int:
        """Release, in the background, the claims that stopped scheduler
        processes left awaiting release (``DeferredReleases``); returns
        how many. Called when a service worker starts."""
        return self.deferred_releases.adopt_orphans()

    def release(self, instance_uuid: str) -> bool:
        """Free the instance's claim; False when it held none."""
        check_instance_uuid(instance_uuid)
        with self._database_errors("release"):
            return self.claims.release(instance_uuid)
