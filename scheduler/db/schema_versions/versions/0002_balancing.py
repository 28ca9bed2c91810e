"""Migrations planned by the balancers and the utilisation history.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

from scheduler.db.models import PreciseDateTime
from scheduler.db.schema_versions import TABLE_OPTIONS

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "migrations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("source_node_id", sa.Integer, nullable=False),
        sa.Column("source_host", sa.String(255), nullable=False),
        sa.Column("dest_node_id", sa.Integer, nullable=False),
        sa.Column("dest_host", sa.String(255), nullable=False),
        sa.Column("cluster", sa.String(255)),
        sa.Column("cluster_policy", sa.String(255), nullable=False),
        sa.Column("migration_policy", sa.String(255)),
        sa.Column("allocation_id", sa.String(36)),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("created_at", PreciseDateTime, nullable=False),
        sa.Column("updated_at", PreciseDateTime, nullable=False),
        **TABLE_OPTIONS,
    )
    for column in ("instance_uuid", "source_node_id", "dest_node_id",
                   "state"):
        op.create_index(f"ix_migrations_{column}", "migrations", [column])
    op.create_table(
        "utilization_samples",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("node_id", sa.Integer,
                  sa.ForeignKey("compute_nodes.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("reported_at", PreciseDateTime, nullable=False),
        sa.Column("cpu_percent", sa.Float, nullable=False),
        sa.Column("instances", sa.Integer, nullable=False),
        sa.UniqueConstraint(
            "node_id", "reported_at",
            name="uniq_utilization_samples0node_id0reported_at"),
        **TABLE_OPTIONS,
    )
