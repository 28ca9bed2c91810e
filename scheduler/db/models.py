"""SQLAlchemy models: compute nodes and the claims (allocations) on them.

Times are naive UTC. MariaDB keeps microseconds only with ``DATETIME(6)``,
which incremental cache refreshes and pending-claim checks depend on.
"""

import datetime

from sqlalchemy import Boolean
from sqlalchemy import DateTime
from sqlalchemy import Float
from sqlalchemy import ForeignKey
from sqlalchemy import Integer
from sqlalchemy import String
from sqlalchemy import Text
from sqlalchemy import UniqueConstraint
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.orm import Mapped
from sqlalchemy.orm import mapped_column

from scheduler.common import clock

PreciseDateTime = DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql",
                                          "mariadb")
# MariaDB's TEXT holds 64 KiB; a node's metrics list may grow past it.
LongText = Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


def utcnow() -> datetime.datetime:
    """Naive UTC now, the form every timestamp column stores (the
    simulated time while ``scheduler.common.clock`` has one)."""
    return clock.utcnow()


class Base(DeclarativeBase):
    pass


class ComputeNode(Base):
    """One hypervisor node, its capacity and its latest metrics report.

    Written by the compute monitor; read by the scheduler. ``generation``
    is bumped by every claim so that claims can compare-and-swap.
    """

    __tablename__ = "compute_nodes"
    __table_args__ = (
        UniqueConstraint("host", "hypervisor_hostname",
                         name="uniq_compute_nodes0host0hypervisor_hostname"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True, nullable=False)
    host: Mapped[str] = mapped_column(String(255), nullable=False)
    hypervisor_hostname: Mapped[str] = mapped_column(String(255),
                                                     nullable=False)
    cluster: Mapped[str | None] = mapped_column(String(255), index=True)
    availability_zone: Mapped[str | None] = mapped_column(String(255))
    vcpus: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    memory_mb: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    local_gb: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    # Measured on the node by the agent; claims live in allocations.
    memory_mb_used: Mapped[int] = mapped_column(Integer, nullable=False,
                                                default=0)
    local_gb_used: Mapped[int] = mapped_column(Integer, nullable=False,
                                               default=0)
    # NULL means "use the scheduler's configured ratio".
    cpu_allocation_ratio: Mapped[float | None] = mapped_column(Float)
    ram_allocation_ratio: Mapped[float | None] = mapped_column(Float)
    disk_allocation_ratio: Mapped[float | None] = mapped_column(Float)
    cpu_info: Mapped[str] = mapped_column(Text, nullable=False, default="{}")
    networks: Mapped[str] = mapped_column(Text, nullable=False, default="[]")
    metrics: Mapped[str] = mapped_column(LongText, nullable=False,
                                         default="[]")
    # The report's instance entries (docs/operator-guide.md), apart from
    # the host's own metrics that every refresh reads; NULL: none, or
    # kept in metrics by an agent older than schema revision 0007.
    instance_metrics: Mapped[str | None] = mapped_column(LongText)
    metrics_updated_at: Mapped[datetime.datetime | None] = mapped_column(
        PreciseDateTime)
    disabled: Mapped[bool] = mapped_column(Boolean, nullable=False,
                                           default=False)
    disabled_reason: Mapped[str | None] = mapped_column(String(255))
    generation: Mapped[int] = mapped_column(Integer, nullable=False,
                                            default=0)
    # Set by every writer (metrics report, claim, release): schedulers
    # refresh their host cache from the rows changed since their last look.
    changed_at: Mapped[datetime.datetime] = mapped_column(
        PreciseDateTime, nullable=False, default=utcnow, index=True)
    created_at: Mapped[datetime.datetime] = mapped_column(
        PreciseDateTime, nullable=False, default=utcnow)
    # Heartbeat: written by the node's agent only.
    updated_at: Mapped[datetime.datetime] = mapped_column(
        PreciseDateTime, nullable=False, default=utcnow)


class Allocation(Base):
    """Resources one instance holds on one compute node (a claim).

    ``instance_uuid`` is unique: an instance holds at most one claim, which
    makes a retried scheduling request idempotent.
    """

    __tablename__ = "allocations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True, nullable=False)
    instance_uuid: Mapped[str] = mapped_column(String(36), unique=True,
                                               nullable=False)
    compute_node_id: Mapped[int] = mapped_column(
        ForeignKey("compute_nodes.id", ondelete="CASCADE"), index=True,
        nullable=False)
    vcpus: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    memory_mb: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    disk_gb: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    instance_group: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime.datetime] = mapped_column(
        PreciseDateTime, nullable=False, default=utcnow)


#: States of a migration; planned and running ones hold their destination
#: claim and count against the per-host migration limits.
MIGRATION_STATES = ("planned", "running", "completed", "failed",
                    "cancelled")
ACTIVE_MIGRATION_STATES = ("planned", "running")


class Migration(Base):
    """A move of one instance that a balancer planned.

    The instance keeps its claim on the source; the migration holds the
    destination claim (``allocation_id``, whose consumer is the
    migration's ``uuid``). Node ids are not foreign keys: the record
    outlives the nodes, which is why their host names are kept too.
    """

    __tablename__ = "migrations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True, nullable=False)
    instance_uuid: Mapped[str] = mapped_column(String(36), index=True,
                                               nullable=False)
    source_node_id: Mapped[int] = mapped_column(Integer, index=True,
                                                nullable=False)
    source_host: Mapped[str] = mapped_column(String(255), nullable=False)
    dest_node_id: Mapped[int] = mapped_column(Integer, index=True,
                                              nullable=False)
    dest_host: Mapped[str] = mapped_column(String(255), nullable=False)
    cluster: Mapped[str | None] = mapped_column(String(255))
    cluster_policy: Mapped[str] = mapped_column(String(255), nullable=False)
    #: A migration policy id; None: the cluster's default applies.
    migration_policy: Mapped[str | None] = mapped_column(String(255))
    allocation_id: Mapped[str | None] = mapped_column(String(36))
    state: Mapped[str] = mapped_column(String(16), index=True,
                                       nullable=False)
    created_at: Mapped[datetime.datetime] = mapped_column(
        PreciseDateTime, nullable=False, default=utcnow)
    updated_at: Mapped[datetime.datetime] = mapped_column(
        PreciseDateTime, nullable=False, default=utcnow)
    # What the node's migration agent (compute_monitor.migration) writes
    # while it carries the move out.
    #: Percent of the guest's memory sent so far.
    progress: Mapped[int | None] = mapped_column(Integer)
    #: Why it failed or was cancelled, one line.
    reason: Mapped[str | None] = mapped_column(String(255))
    #: The agent carrying it out (host:pid); its lease is heartbeat_at.
    agent: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime.datetime | None] = mapped_column(
        PreciseDateTime)
    heartbeat_at: Mapped[datetime.datetime | None] = mapped_column(
        PreciseDateTime)
    #: ``scheduler-manage migrations cancel`` of a running move: the agent
    #: aborts it.
    cancel_requested: Mapped[bool] = mapped_column(
        Boolean, nullable=False, default=False)


class UtilizationSample(Base):
    """One cpu.percent report of a node, kept for as long as the longest
    balancer window needs it (``scheduler.balancer.history``)."""

    __tablename__ = "utilization_samples"
    __table_args__ = (
        UniqueConstraint(
            "node_id", "reported_at",
            name="uniq_utilization_samples0node_id0reported_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    node_id: Mapped[int] = mapped_column(
        ForeignKey("compute_nodes.id", ondelete="CASCADE"), nullable=False)
    #: The metric's own timestamp, not the time it was recorded.
    reported_at: Mapped[datetime.datetime] = mapped_column(PreciseDateTime,
                                                           nullable=False)
    cpu_percent: Mapped[float] = mapped_column(Float, nullable=False)
    instances: Mapped[int] = mapped_column(Integer, nullable=False)


class SchedulingPolicy(Base):
    """A scheduling policy made through the API (config-file policies
    have no row). ``version`` is bumped by every change: the ETag."""

    __tablename__ = "scheduling_policies"
    __table_args__ = (
        UniqueConstraint("name", name="uniq_scheduling_policies0name"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False,
                                             default="")
    #: None: [filter_scheduler] weight_normalization.
    normalization: Mapped[str | None] = mapped_column(String(16))
    balancer: Mapped[str | None] = mapped_column(String(255))
    #: JSON object of the balancer's parameters.
    properties: Mapped[str] = mapped_column(Text, nullable=False,
                                            default="{}")
    version: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    created_by: Mapped[str | None] = mapped_column(String(255))
    #: The creator's Keystone domain id (empty: htpasswd or default).
    created_by_domain: Mapped[str] = mapped_column(String(64),
                                                   nullable=False,
                                                   default="")
    created_at: Mapped[datetime.datetime] = mapped_column(
        PreciseDateTime, nullable=False, default=utcnow)
    updated_at: Mapped[datetime.datetime] = mapped_column(
        PreciseDateTime, nullable=False, default=utcnow)


class SchedulingPolicyUnit(Base):
    """A filter (``position`` first|last|None) or weigher (``factor``) of
    a stored policy; ``ordinal`` keeps the order written."""

    __tablename__ = "scheduling_policy_units"
    __table_args__ = (
        UniqueConstraint(
            "policy_id", "unit_type", "unit_name",
            name="uniq_scheduling_policy_units0policy_id0unit_type0"
                 "unit_name"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    policy_id: Mapped[str] = mapped_column(
        ForeignKey("scheduling_policies.id", ondelete="CASCADE"),
        nullable=False)
    unit_type: Mapped[str] = mapped_column(String(16), nullable=False)
    unit_name: Mapped[str] = mapped_column(String(255), nullable=False)
    position: Mapped[str | None] = mapped_column(String(8))
    factor: Mapped[int | None] = mapped_column(Integer)
    ordinal: Mapped[int] = mapped_column(Integer, nullable=False)


class ClusterSetting(Base):
    """What the API set for one cluster; it wins over the config file."""

    __tablename__ = "cluster_settings"

    cluster: Mapped[str] = mapped_column(String(255), primary_key=True)
    # No foreign key: a config-file policy has an id but no row.
    scheduling_policy_id: Mapped[str | None] = mapped_column(String(36),
                                                             index=True)
    properties: Mapped[str] = mapped_column(Text, nullable=False,
                                            default="{}")
    migration_policy: Mapped[str | None] = mapped_column(String(255))
    bandwidth_method: Mapped[str | None] = mapped_column(String(32))
    bandwidth_custom: Mapped[int | None] = mapped_column(Integer)
    version: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    updated_at: Mapped[datetime.datetime] = mapped_column(
        PreciseDateTime, nullable=False, default=utcnow)


class DisabledPolicyUnit(Base):
    """A third-party policy unit an administrator disabled."""

    __tablename__ = "disabled_policy_units"

    unit_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    unit_type: Mapped[str] = mapped_column(String(16), nullable=False)
    unit_name: Mapped[str] = mapped_column(String(255), nullable=False)
    disabled_at: Mapped[datetime.datetime] = mapped_column(
        PreciseDateTime, nullable=False, default=utcnow)


class Permission(Base):
    """A role of a user, on one cluster or on every one (``*``).
    ``user_domain``: the Keystone domain (id or name) of the user; empty
    for an htpasswd user or a Keystone user of the ``default`` domain."""

    __tablename__ = "permissions"
    __table_args__ = (
        UniqueConstraint(
            "user_name", "user_domain", "role", "cluster",
            name="uniq_permissions0user_name0user_domain0role0cluster"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    user_name: Mapped[str] = mapped_column(String(255), nullable=False)
    user_domain: Mapped[str] = mapped_column(String(64), nullable=False,
                                             default="")
    role: Mapped[str] = mapped_column(String(32), nullable=False)
    cluster: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[datetime.datetime] = mapped_column(
        PreciseDateTime, nullable=False, default=utcnow)


class PolicyGeneration(Base):
    """One row, bumped by every change the API makes to policies or
    cluster settings; workers read it with each host refresh and reload
    the policies only when it moved."""

    __tablename__ = "policy_generation"

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=False)
    generation: Mapped[int] = mapped_column(Integer, nullable=False)
