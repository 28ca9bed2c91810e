"""Scheduling policies, their units, cluster settings and permissions of
the REST API (docs/api.md), and the generation counter that tells every
scheduler worker that one of them changed.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

from scheduler.db.models import PreciseDateTime
from scheduler.db.schema_versions import TABLE_OPTIONS

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


# Long on purpose: the tables' definitions, as alembic migrations keep
# them (frozen, never shared with the models, which move on).
def upgrade() -> None:
    op.create_table(
        "scheduling_policies",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("normalization", sa.String(16)),
        sa.Column("balancer", sa.String(255)),
        sa.Column("properties", sa.Text, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("created_by", sa.String(255)),
        sa.Column("created_at", PreciseDateTime, nullable=False),
        sa.Column("updated_at", PreciseDateTime, nullable=False),
        sa.UniqueConstraint("name", name="uniq_scheduling_policies0name"),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "scheduling_policy_units",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("policy_id", sa.String(36),
                  sa.ForeignKey("scheduling_policies.id",
                                ondelete="CASCADE"),
                  nullable=False),
        sa.Column("unit_type", sa.String(16), nullable=False),
        sa.Column("unit_name", sa.String(255), nullable=False),
        sa.Column("position", sa.String(8)),
        sa.Column("factor", sa.Integer),
        sa.Column("ordinal", sa.Integer, nullable=False),
        sa.UniqueConstraint(
            "policy_id", "unit_type", "unit_name",
            name="uniq_scheduling_policy_units0policy_id0unit_type0"
                 "unit_name"),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "cluster_settings",
        sa.Column("cluster", sa.String(255), primary_key=True),
        # No foreign key: a config-file policy has an id but no row.
        sa.Column("scheduling_policy_id", sa.String(36)),
        sa.Column("properties", sa.Text, nullable=False),
        sa.Column("migration_policy", sa.String(255)),
        sa.Column("bandwidth_method", sa.String(32)),
        sa.Column("bandwidth_custom", sa.Integer),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("updated_at", PreciseDateTime, nullable=False),
        **TABLE_OPTIONS,
    )
    op.create_index("ix_cluster_settings_scheduling_policy_id",
                    "cluster_settings", ["scheduling_policy_id"])
    op.create_table(
        "disabled_policy_units",
        sa.Column("unit_id", sa.String(36), primary_key=True),
        sa.Column("unit_type", sa.String(16), nullable=False),
        sa.Column("unit_name", sa.String(255), nullable=False),
        sa.Column("disabled_at", PreciseDateTime, nullable=False),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "permissions",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("user_name", sa.String(255), nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("cluster", sa.String(255), nullable=False),
        sa.Column("created_at", PreciseDateTime, nullable=False),
        sa.UniqueConstraint("user_name", "role", "cluster",
                            name="uniq_permissions0user_name0role0cluster"),
        **TABLE_OPTIONS,
    )
    table = op.create_table(
        "policy_generation",
        sa.Column("id", sa.Integer, primary_key=True,
                  autoincrement=False),
        sa.Column("generation", sa.Integer, nullable=False),
        **TABLE_OPTIONS,
    )
    # The one row every API write bumps and every worker reads.
    op.bulk_insert(table, [{"id": 1, "generation": 0}])
