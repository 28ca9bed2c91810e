"""The balance planner: one balancing tick over the clusters.

``BalancePlanner.balance(cluster=None, dry_run=False)`` is the entry point
of the periodic task, the ``balance`` RPC and ``scheduler-manage
balance``. For each cluster whose policy names a balancer it

1. records the new cpu.percent reports in the utilisation history,
2. asks the balancer for proposals (an instance, its source host and the
   candidate destinations), best first,
3. schedules the instance through the policy's filters and weighers,
   restricted to the candidates (the source is never one),
4. claims its resources on the chosen host (then the alternates) with the
   migration's uuid as the consumer: the instance keeps its source claim,
5. records the migration, state ``planned``, and calls ``on_planned``.

At most one migration is planned per cluster per tick, as in oVirt. Hosts
at ``[migration] max_incoming_per_host`` or ``max_outgoing_per_host``
planned or running migrations are neither sources nor destinations. A
dry run decides the same way but claims and records nothing.
"""

import dataclasses
import datetime
import itertools
import uuid
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence

from oslo_config import cfg
from oslo_log import log as logging

from scheduler import claims as claims_mod
from scheduler import exception
from scheduler.balancer import base
from scheduler.balancer import history as history_mod
from scheduler.common import observability
from scheduler.db import api as db_api
from scheduler.db import locks
from scheduler.db import models
from scheduler.hosts.cache.manager import HostManager
from scheduler.hosts.state import HostState
from scheduler.hosts.state import seconds_before
from scheduler.hosts.state import stale_before
from scheduler.placement import migrations as migrations_mod
from scheduler.placement.placer import Placer
from scheduler.placement.placer import Wanted
from scheduler.policies import cluster as cluster_policy
from scheduler.policies.migration import policies as migration_policies
from scheduler.policies.schedulers import PolicySchedulers

LOG = logging.getLogger(__name__)

PlannedMigration = migrations_mod.PlannedMigration

# Proposals tried per cluster and tick when the pipeline or the claim
# turns the best ones down; enough to get past a few full hosts without
# scanning a large cluster's every instance.
_MAX_PROPOSALS = 10


class BalancePlanner:
    """Plans the migrations of a balancing tick (see the module).

    ``policies`` defaults to ``cluster_policy.load_policies(conf)``;
    ``max_incoming``/``max_outgoing`` to ``[migration]
    max_incoming_per_host``/``max_outgoing_per_host``. ``clock`` gives
    the naive UTC time metrics are aged against (tests simulate time).
    ``placer`` claims the destinations; by default one of its own, over
    ``host_manager``. ``schedulers`` are the policies' filter schedulers
    (the manager's in a service); by default a set of its own over
    ``policies``.
    """

    def __init__(self, conf: cfg.ConfigOpts,
                 host_manager: HostManager | None = None,
                 policies: cluster_policy.PolicySet | None = None,
                 on_planned: Callable[[dict], None] | None = None,
                 max_incoming: int | None = None,
                 max_outgoing: int | None = None,
                 clock: Callable[[], datetime.datetime] = models.utcnow,
                 placer: Placer | None = None,
                 schedulers: PolicySchedulers | None = None):
        self.conf = conf
        self.host_manager = host_manager or HostManager(conf)
        #: The policies in use and their filter schedulers.
        self.schedulers = schedulers or PolicySchedulers(
            conf, self.host_manager,
            policies or cluster_policy.load_policies(conf))
        self.on_planned = on_planned
        limits = conf.migration
        self.max_incoming = max_incoming or limits.max_incoming_per_host
        self.max_outgoing = max_outgoing or limits.max_outgoing_per_host
        self.clock = clock
        #: Claims the destinations (the manager's own placer in a
        #: service, so that both keep one host cache and one set of
        #: deferred releases).
        self.placer = placer or Placer.for_conf(conf, self.host_manager)
        self.claims = self.placer.claims
        self.migrations = migrations_mod.MigrationStore(conf)
        self.samples = history_mod.SampleStore(conf)

    @property
    def policies(self) -> cluster_policy.PolicySet:
        """The cluster policies in use."""
        return self.schedulers.policies

    def balance(self, cluster: str | None = None, dry_run: bool = False,
                spacing: float = 0.0, migration_policy: str | None = None
                ) -> list[PlannedMigration]:
        """Plan at most one migration in ``cluster`` (None: in every
        cluster that has hosts) and return those planned.

        Each migration carries the id of the migration policy it is to
        run with: ``migration_policy`` when given (InvalidRequest if no
        such policy), else the cluster's (``[migration]
        cluster_policies``, ``default_policy``). The policies file is read
        again at every tick; a custom policy it rejects stops only the
        clusters that use it.

        ``spacing`` (seconds) skips a cluster where a migration was
        planned less than that long ago, by any worker: how the periodic
        task of several workers keeps to one migration per cluster and
        interval.

        ``on_planned`` gets each migration's ``as_dict()`` once its claim
        and row are made; a dry run calls it for none. The history is
        recorded in a dry run too: it only observes what the nodes
        reported. A balancer or database error in one cluster
        is logged on one line and the other clusters are balanced.
        """
        movement = self._migration_policies(migration_policy)
        hosts = self.host_manager.host_states()
        if all(policy.balancer is None
               for policy in self.policies.policies.values()):
            return []  # nothing balances: no host's state is built
        by_cluster: dict[str | None, list[HostState]] = {}
        for host in hosts:
            by_cluster.setdefault(host.cluster, []).append(host)
        names = [cluster] if cluster is not None else sorted(
            by_cluster, key=lambda name: (name is None, name or ""))
        history = self._history(hosts, by_cluster)
        planned = []
        for name in names:
            policy = self.policies.for_cluster(name)
            if policy is None or policy.balancer is None:
                continue
            try:
                chosen = movement.policy_for(name, migration_policy)
                migration = self._balance_cluster(
                    name, policy, by_cluster.get(name, []), history,
                    dry_run, spacing, chosen)
            except Exception as e:  # one cluster never stops the others
                LOG.error("Balancing cluster %s (policy %s) failed: %s: "
                          "%s", name, policy.name, type(e).__name__,
                          db_api.one_line(e))
                continue
            if migration is None:
                continue
            planned.append(migration)
            if dry_run:
                continue
            observability.metrics().planned(name, policy.name)
            if self.on_planned is not None:
                self.on_planned(migration.as_dict())
        return planned

    def _history(self, hosts: Sequence[HostState],
                 clusters: Iterable[str | None]
                 ) -> history_mod.UtilizationHistory:
        """The utilisation history, with the hosts' new reports recorded,
        while the policy of any of ``clusters`` balances: with none,
        nothing reads it, and recording costs a read and a write of every
        node's sample at every tick."""
        if not any(policy is not None and policy.balancer is not None
                   for policy in map(self.policies.for_cluster, clusters)):
            return history_mod.UtilizationHistory({})
        return self.samples.record(hosts, self._longest_window())

    def _migration_policies(self, migration_policy: str | None
                            ) -> migration_policies.MigrationPolicies:
        """The migration policies of this tick (read again each time);
        InvalidRequest if ``migration_policy`` names none of them."""
        movement = migration_policies.read_migration_policies(self.conf)
        if self.policies.migration_policies:
            # Set through the REST API: wins over the config file's.
            movement = dataclasses.replace(movement, cluster_policies={
                **movement.cluster_policies,
                **self.policies.migration_policies})
        if migration_policy is not None:
            movement.policy_for(None, migration_policy)
        return movement

    def _longest_window(self) -> int:
        return max((policy.balancer_parameters.get(name, 0)
                    for policy in self.policies.policies.values()
                    for name in base.WINDOW_PARAMETERS),
                   default=0)

    def _balance_cluster(self, cluster: str | None,
                         policy: cluster_policy.ClusterPolicy,
                         hosts: Sequence[HostState],
                         history: history_mod.UtilizationHistory,
                         dry_run: bool, spacing: float,
                         migration_policy: migration_policies.MigrationPolicy
                         ) -> PlannedMigration | None:
        if not hosts:
            return None
        balancer = base.balancer_class(policy.balancer)(
            dict(policy.balancer_parameters))
        # Under the cluster's lock, so that two workers ticking together
        # see each other's migrations and plan one, not two.
        with locks.database_lock(db_api.get_engine(self.conf),
                                 f"balance:{cluster or '-'}",
                                 self.conf.scheduler.lock_acquire_timeout):
            if spacing and self._planned_within(cluster, spacing):
                return None
            loads = self._loads(hosts, self.migrations.active(),
                                migration_policy.max_migrations)
            proposals = balancer.propose(loads, history)
            for proposal in itertools.islice(proposals, _MAX_PROPOSALS):
                migration = self._plan(cluster, policy, proposal, dry_run,
                                       migration_policy)
                if migration is not None:
                    return migration
        return None

    def _planned_within(self, cluster: str | None, seconds: float) -> bool:
        last = self.migrations.last_planned(cluster)
        return last is not None and last > seconds_before(self.clock(),
                                                             seconds)

    def _loads(self, hosts: Sequence[HostState],
               active: Iterable[PlannedMigration],
               max_migrations: int | None = None) -> list[base.HostLoad]:
        """What the balancer sees of each host. A host takes part in no
        new migration once it has ``[migration] max_incoming_per_host``
        incoming or ``max_outgoing_per_host`` outgoing ones, nor once
        either reaches the migration policy's ``maxMigrations`` (None:
        the policy sets no limit)."""
        max_incoming, max_outgoing = self.max_incoming, self.max_outgoing
        if max_migrations is not None:
            max_incoming = min(max_incoming, max_migrations)
            max_outgoing = min(max_outgoing, max_migrations)
        metrics = self.conf.metrics
        cutoff = stale_before(self.clock(), metrics.max_age)
        window = metrics.instance_history_window and metrics.expected_window
        by_node = {host.node_id: host for host in hosts}
        outgoing: dict[int, int] = {}
        incoming: dict[int, int] = {}
        leaving_vcpus: dict[int, float] = {}
        moving = set()
        for migration in active:
            source = migration.source_node_id
            outgoing[source] = outgoing.get(source, 0) + 1
            incoming[migration.dest_node_id] = incoming.get(
                migration.dest_node_id, 0) + 1
            # What the instance leaving is measured to use on its source,
            # as the balancer counted it when it planned the move.
            leaving = base.Instance(migration.instance_uuid,
                                    migration.vcpus, 0, 0)
            if source in by_node:
                leaving = base.measured(leaving, by_node[source],
                                        cutoff, window)
            leaving_vcpus[source] = leaving_vcpus.get(source, 0.0) + \
                leaving.load
            # The instance, and the migration's own destination claim.
            moving.update((migration.instance_uuid, migration.uuid))
        instances = self._instances([host.node_id for host in hosts])
        loads = []
        for host in hosts:
            node = host.node_id
            cpu = host.metric_since(history_mod.CPU_PERCENT, cutoff)
            if cpu is not None and host.vcpus > 0:
                cpu = max(cpu - 100.0 * leaving_vcpus.get(node, 0)
                          / host.vcpus, 0.0)
            loads.append(base.HostLoad(
                state=host, cpu_percent=cpu,
                instances=base.MeasuredInstances(
                    [instance for instance in instances.get(node, ())
                     if instance.uuid not in moving], host, cutoff, window),
                instance_count=len(host.instances) - outgoing.get(node, 0),
                can_migrate=(incoming.get(node, 0) < max_incoming
                             and outgoing.get(node, 0) < max_outgoing)))
        return loads

    def _instances(self, node_ids: Sequence[int]
                   ) -> dict[int, list[base.Instance]]:
        # The claims the host cache read with the hosts (balance() has
        # just refreshed it), not a read of every claim at every tick.
        return {node_id: [base.Instance(claim.instance_uuid, claim.vcpus,
                                        claim.memory_mb, claim.disk_gb,
                                        claim.instance_group,
                                        arrived_at=claim.created_at)
                          for claim in claims]
                for node_id, claims
                in self.host_manager.claims_on(node_ids).items()}

    def _plan(self, cluster: str | None,
              policy: cluster_policy.ClusterPolicy,
              proposal: base.Proposal, dry_run: bool,
              migration_policy: migration_policies.MigrationPolicy
              ) -> PlannedMigration | None:
        """Schedule and claim one proposal; None when no candidate takes
        it."""
        instance = proposal.instance
        migration_uuid = str(uuid.uuid4())
        spec = migrations_mod.migration_spec(instance, cluster, migration_uuid)
        source = proposal.source.state
        candidates = [load.state for load in proposal.destinations
                      if load.node_id != source.node_id]
        try:
            decision, = self.schedulers.for_policy(policy.name).select(
                spec, hosts=candidates)
        except exception.NoValidHost as e:
            LOG.debug("No destination for %s off %s: %s", instance.uuid,
                      source.host, e)
            return None
        usage = claims_mod.Usage(instance.vcpus, instance.memory_mb,
                                 instance.disk_gb)
        made: list[claims_mod.Claim] = []
        try:
            if dry_run:
                destination, claim = decision.selected[0], None
            else:
                found = self.placer.claim_first(
                    decision.selected,
                    Wanted(migration_uuid, usage, instance.group), made)
                if found is None:
                    LOG.debug("Migration of %s: every candidate was full",
                              instance.uuid)
                    return None
                index, claim = found
                destination = decision.selected[index]
            migration = self._migration(
                migration_uuid, proposal, destination, claim, cluster,
                policy, migration_policy)
            if claim is not None:
                self.migrations.add(migration)
        except BaseException:
            # Nothing half-claimed: the claim (also one whose commit was
            # lost with the connection) is released, in the background
            # if the database is away.
            self.placer.roll_back(made)
            raise
        LOG.log(logging.DEBUG if dry_run else logging.INFO,
                "%s migration %s of instance %s from %s to %s (cluster "
                "%s, policy %s, migration policy %s)",
                "Dry run: would plan" if dry_run else "Planned",
                migration_uuid, instance.uuid, source.host,
                destination.host, cluster, policy.name,
                migration_policy.id)
        return migration

    def _migration(self, migration_uuid: str, proposal: base.Proposal,
                   destination: HostState,
                   claim: claims_mod.Claim | None, cluster: str | None,
                   policy: cluster_policy.ClusterPolicy,
                   migration_policy: migration_policies.MigrationPolicy
                   ) -> PlannedMigration:
        """The planned migration of the proposal to ``destination``."""
        instance, source = proposal.instance, proposal.source.state
        now = models.utcnow()
        return PlannedMigration(
            uuid=migration_uuid, instance_uuid=instance.uuid,
            source_node_id=source.node_id, source_host=source.host,
            dest_node_id=destination.node_id,
            dest_host=destination.host, cluster=cluster,
            cluster_policy=policy.name,
            migration_policy=migration_policy.id,
            allocation_id=claim.allocation_id if claim else None,
            state=migrations_mod.PLANNED, created_at=now,
            updated_at=now, vcpus=instance.vcpus,
            bandwidth_mbps=migration_policies.bandwidth_per_migration(
                self.conf, migration_policy,
                setting=self.policies.bandwidths.get(cluster)),
            load_vcpus=round(instance.load, 3),
            load_percent=(100.0 if instance.cpu_percent is None
                          else instance.cpu_percent),
            load_source=instance.load_source)

    def use_policies(self, policies: cluster_policy.PolicySet) -> None:
        """Plan the next ticks with ``policies`` (changed through the
        REST API): ``PolicySchedulers.use``, a no-op when the manager
        sharing them put them in use already."""
        self.schedulers.use(policies)
