"""Compute nodes and allocations.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

from scheduler.db.models import LongText
from scheduler.db.models import PreciseDateTime
from scheduler.db.schema_versions import TABLE_OPTIONS

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "compute_nodes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("hypervisor_hostname", sa.String(255), nullable=False),
        sa.Column("cluster", sa.String(255)),
        sa.Column("availability_zone", sa.String(255)),
        sa.Column("vcpus", sa.Integer, nullable=False),
        sa.Column("memory_mb", sa.Integer, nullable=False),
        sa.Column("local_gb", sa.Integer, nullable=False),
        sa.Column("memory_mb_used", sa.Integer, nullable=False),
        sa.Column("local_gb_used", sa.Integer, nullable=False),
        sa.Column("cpu_allocation_ratio", sa.Float),
        sa.Column("ram_allocation_ratio", sa.Float),
        sa.Column("disk_allocation_ratio", sa.Float),
        sa.Column("cpu_info", sa.Text, nullable=False),
        sa.Column("networks", sa.Text, nullable=False),
        sa.Column("metrics", LongText, nullable=False),
        sa.Column("metrics_updated_at", PreciseDateTime),
        sa.Column("disabled", sa.Boolean, nullable=False),
        sa.Column("disabled_reason", sa.String(255)),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("changed_at", PreciseDateTime, nullable=False),
        sa.Column("created_at", PreciseDateTime, nullable=False),
        sa.Column("updated_at", PreciseDateTime, nullable=False),
        sa.UniqueConstraint("host", "hypervisor_hostname",
                            name="uniq_compute_nodes0host0hypervisor_hostname"),
        **TABLE_OPTIONS,
    )
    op.create_index("ix_compute_nodes_cluster", "compute_nodes", ["cluster"])
    op.create_index("ix_compute_nodes_changed_at", "compute_nodes",
                    ["changed_at"])
    op.create_table(
        "allocations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("instance_uuid", sa.String(36), nullable=False,
                  unique=True),
        sa.Column("compute_node_id", sa.Integer,
                  sa.ForeignKey("compute_nodes.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("vcpus", sa.Integer, nullable=False),
        sa.Column("memory_mb", sa.Integer, nullable=False),
        sa.Column("disk_gb", sa.Integer, nullable=False),
        sa.Column("instance_group", sa.String(255)),
        sa.Column("created_at", PreciseDateTime, nullable=False),
        **TABLE_OPTIONS,
    )
    op.create_index("ix_allocations_compute_node_id", "allocations",
                    ["compute_node_id"])
    op.create_index("ix_allocations_instance_group", "allocations",
                    ["instance_group"])
    op.create_index("ix_allocations_created_at", "allocations",
                    ["created_at"])
