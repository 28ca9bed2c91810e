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

This module is the façade: step 1 is ``scheduler.request.validation``,
step 2 ``scheduler.placement.lock``, steps 3-5
``scheduler.placement.rounds`` over the ``Placer`` (which the balance
planner claims through too) and the retry ``scheduler.placement.pending``;
the counters are ``scheduler.placement.stats.ManagerStats``.
"""

import uuid

from oslo_config import cfg

from scheduler.common import observability
from scheduler.engine import filter_scheduler
from scheduler.hosts import reported_metrics
from scheduler.placement import lock
from scheduler.placement import pending
from scheduler.placement.balance_planner import BalancePlanner
from scheduler.placement.errors import database_errors
from scheduler.placement.placer import Placer
from scheduler.placement.rounds import RequestPlacement
from scheduler.placement.stats import ManagerStats
from scheduler.policies import cluster as cluster_policy
from scheduler.policies.live import LivePolicies
from scheduler.policies.schedulers import PolicySchedulers
from scheduler.request.spec import RequestSpec
from scheduler.request.validation import check_instance_uuid
from scheduler.request.validation import validate_request


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
        #: The policies in use and their filter schedulers: the one set
        #: of the service, lent to the planner.
        self.schedulers = PolicySchedulers(
            conf, self.host_manager, cluster_policy.load_policies(conf),
            default=self.scheduler)
        #: Claims the hosts of requests and of planned migrations.
        self.placer = Placer.for_conf(conf, self.host_manager)
        self.claims = self.placer.claims
        self.deferred_releases = self.placer.deferred_releases
        #: Plans balancing migrations (``balance()``, the periodic task).
        self.planner = BalancePlanner(conf, self.host_manager,
                                      placer=self.placer,
                                      schedulers=self.schedulers)
        # Policies the REST API stores: read with each host refresh, in
        # its scan.
        self.live_policies = LivePolicies(conf, self.policies,
                                          self._use_policies)
        self.host_manager.refresh_probes.append(self.live_policies)
        self.stats = ManagerStats()

    @property
    def policies(self) -> cluster_policy.PolicySet:
        """The cluster policies in use."""
        return self.schedulers.policies

    # select_destinations

    def select_destinations(
            self, request_spec: dict, instance_uuids: list[str] | None = None,
            return_alternates: bool = False,
            report: observability.DecisionReport | None = None
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

        ``report`` is filled in on the way (instances, cluster, policy,
        candidates); its caller, the RPC endpoint, writes the decision
        line.
        """
        if report is None:
            report = observability.DecisionReport()
        spec_dict, uuids = validate_request(request_spec, instance_uuids)
        anonymous = not uuids
        if anonymous:
            uuids = [str(uuid.uuid4())
                     for _ in range(spec_dict["num_instances"])]
        # Extra specs and hints are checked before anything is locked or
        # claimed; the one spec and scheduler then serve every round.
        spec = self._spec(spec_dict, uuids)
        report.instances = len(uuids)
        report.cluster = spec.cluster
        policy, scheduler = self.schedulers.for_cluster(spec.cluster)
        report.policy = None if policy is None else policy.label
        scheduler.validate(spec)
        self.stats.add(requests=1)

        cluster = spec.cluster
        # Each attempt runs under the cluster lock (in that mode), which
        # is released before a wait for pending claims.
        for attempt in pending.attempts(self.conf, self.stats,
                                        spec.flavor.name or "request",
                                        cluster):
            with attempt, database_errors("select_destinations"), \
                    lock.cluster_lock(self.conf, cluster) as check_hold:
                return RequestPlacement(
                    self.placer, self.host_manager, scheduler, spec,
                    self.stats, self.conf.scheduler.max_claim_rounds, uuids,
                    anonymous, report, check_hold, waits_for_pending=(
                        self.conf.scheduler.pending_retry_timeout > 0)
                ).place(return_alternates)
        raise AssertionError("pending.attempts() never ends")

    def _spec(self, spec_dict: dict,
              uuids: list[str] | None = None) -> RequestSpec:
        if uuids:
            spec_dict = {**spec_dict, "num_instances": len(uuids)}
        return RequestSpec.from_dict(
            spec_dict, scope=self.conf.metrics.extra_specs_scope,
            instance_uuids=uuids)

    def unreported_weight_metrics(self) -> list[tuple[str, str]]:
        """The ``[metrics] weight_setting`` metrics no host reports, each
        with why (``reported_metrics.unreported_weight_metrics``)."""
        return reported_metrics.unreported_weight_metrics(
            self.conf.metrics.weight_setting, self.host_manager.host_states())

    # explain / release

    def explain(self, request_spec: dict) -> dict:
        """The decision for one instance without claiming
        (docs/operator-guide.md JSON form: selected, summary, hosts)."""
        spec_dict, _ = validate_request(request_spec)
        spec = self._spec(spec_dict)
        policy, scheduler = self.schedulers.for_cluster(spec.cluster)
        with database_errors("explain"):
            result = scheduler.explain(spec).as_dict()
        # Which policy decided, with the version of an API-stored one.
        result["policy"] = None if policy is None else policy.label
        return result

    def _use_policies(self, policies: cluster_policy.PolicySet) -> None:
        """Put the live PolicySet in use (``PolicySchedulers.use``), for
        requests and the planner at once."""
        self.schedulers.use(policies)

    # balance

    def balance(self, cluster: str | None = None, dry_run: bool = False,
                migration_policy: str | None = None) -> list[dict]:
        """One balancing tick now (``BalancePlanner.balance``): the
        migrations planned, at most one per cluster, or that would be
        when ``dry_run``; ``migration_policy`` overrides the clusters'
        migration policy."""
        with database_errors("balance"):
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
        with database_errors("release"):
            return self.claims.release(instance_uuid)
