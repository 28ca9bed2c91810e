"""The migration agent's side of the ``migrations`` table.

Why the table and not the ``scheduler.balance.migration_planned``
notification: the row is what the balancer commits with the destination
claim, so an agent that was down or restarted still finds every planned
move, and the table is the one truth all agents share for the per-host
limits. A notification is lost when no agent listens; the table is not.

A move is taken exactly once, even by two agents racing: the take is a
conditional ``UPDATE ... SET state='running' WHERE state='planned'`` in
a write transaction that first locks the source and destination node
rows, counts the moves running out of the source and into the
destination ([migration] max_outgoing_per_host, max_incoming_per_host)
and takes the move only below both limits. Only one UPDATE finds the
row still planned; the node locks make the limits hold across agents.

The agent holding a running move renews its lease (``heartbeat_at``)
every poll; leases are written and judged by the database server's
clock, the one clock every agent shares. A move whose lease is older
than [migration_agent] lease (or that has none) is
taken over by any agent (``steal``: conditional on the old holder and
heartbeat, so only one reaper wins), which ends it by where the
instance runs.
"""

import datetime

import sqlalchemy as sa
from oslo_config import cfg

from scheduler.db import api as db_api
from scheduler.db import migration_agent_sql
from scheduler.db import models
from scheduler.db import policy_sql
from scheduler.db.claim_sql import write_transaction
from scheduler.placement import migrations as migrations_mod
from scheduler.policies import store as policy_store

COMPLETED = migrations_mod.COMPLETED
FAILED = migrations_mod.FAILED
CANCELLED = migrations_mod.CANCELLED


class SourceFull(str):
    """A take refused by [migration] max_outgoing_per_host: every other
    move leaving the source is refused too, until one ends."""


class AgentStore:
    """The migrations of ``[database] connection``, as agent ``agent``
    (``host:pid``) sees them."""

    def __init__(self, conf: cfg.ConfigOpts, agent: str):
        self.conf = conf
        self.agent = agent
        self._migrations = migrations_mod.MigrationStore(conf)

    @property
    def engine(self) -> sa.Engine:
        return db_api.get_engine(self.conf)

    def node_id(self, host: str, hypervisor_hostname: str) -> int | None:
        with self.engine.connect() as connection:
            return migration_agent_sql.node_id(connection, host,
                                               hypervisor_hostname)

    def planned_from(self, node_id: int) -> list[sa.Row]:
        with self.engine.connect() as connection:
            return migration_agent_sql.planned_from(connection, node_id)

    def take(self, row: sa.Row) -> str | None:
        """Take the planned move ``row``: None when taken, else why not
        (a limit, or it is not planned any more)."""
        limits = self.conf.migration
        with write_transaction(self.engine) as connection:
            now = migration_agent_sql.database_now(connection)
            migration_agent_sql.lock_nodes(
                connection, {row.source_node_id, row.dest_node_id})
            outgoing, incoming = migration_agent_sql.running_counts(
                connection, row.source_node_id, row.dest_node_id)
            if outgoing >= limits.max_outgoing_per_host:
                return SourceFull(
                    f"{outgoing} moves already leave {row.source_host} "
                    f"([migration] max_outgoing_per_host)")
            if incoming >= limits.max_incoming_per_host:
                return (f"{incoming} moves already enter {row.dest_host} "
                        f"([migration] max_incoming_per_host)")
            if not migration_agent_sql.take(connection, row.uuid,
                                            self.agent, now):
                return "it is no longer planned"
        return None

    def heartbeat(self, migration_uuid: str, progress: int | None
                  ) -> tuple[bool, bool]:
        """Renew the lease: (still held, cancellation asked for)."""
        with self.engine.begin() as connection:
            now = migration_agent_sql.database_now(connection)
            held = migration_agent_sql.heartbeat(
                connection, migration_uuid, self.agent, now, progress)
            row = migration_agent_sql.one(connection, migration_uuid)
        return held, bool(row.cancel_requested)

    def finish(self, migration_uuid: str, state: str,
               reason: str | None) -> bool:
        """End a move this agent holds; the claims follow (see
        MigrationStore.finish). False when it no longer holds it."""
        return self._migrations.finish(
            migration_uuid, state, reason,
            only_from=migration_agent_sql.RUNNING, agent=self.agent)

    def record_landed(self, migration_uuid: str) -> bool:
        """A move this agent saw complete after losing its lease, which
        the agent that took it over ended otherwise: completed after all
        (see MigrationStore.record_landed). False when it is not so
        ended."""
        return self._migrations.record_landed(
            migration_uuid, f"completed after agent {self.agent} lost its "
            "lease; corrected by that agent")

    def fail_planned(self, migration_uuid: str, reason: str) -> bool:
        """A planned move that cannot start (its destination node is
        gone): failed, its destination claim released."""
        return self._migrations.finish(migration_uuid, FAILED, reason,
                                       only_from=migration_agent_sql.PLANNED)

    def expired(self) -> list[sa.Row]:
        """The running moves whose lease is older than [migration_agent]
        lease by the database's clock."""
        with self.engine.connect() as connection:
            cutoff = migration_agent_sql.database_now(connection) - (
                datetime.timedelta(seconds=self.conf.migration_agent.lease))
            return migration_agent_sql.expired(connection, cutoff)

    def steal(self, row: sa.Row) -> bool:
        with self.engine.begin() as connection:
            return migration_agent_sql.steal(
                connection, row, self.agent,
                migration_agent_sql.database_now(connection))

    def node_exists(self, node_id: int) -> bool:
        with self.engine.connect() as connection:
            return connection.execute(sa.select(models.ComputeNode.id).where(
                models.ComputeNode.id == node_id)).first() is not None

    def bandwidth_setting(self, cluster: str | None) -> str | int:
        """The cluster's bandwidth setting (REST API), else [migration]
        bandwidth: auto, hypervisor_default or Mbps."""
        with self.engine.connect() as connection:
            for setting in policy_sql.cluster_settings(connection):
                if setting["cluster"] == cluster:
                    found = policy_store.bandwidth_setting(setting)
                    if found is not None:
                        return found
        return self.conf.migration.bandwidth
