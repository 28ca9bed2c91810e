"""Two indexes of ``allocations`` that no statement reads dropped:
``instance_group`` (the host cache reads a node's claims by node, and
groups from them) and ``created_at`` (a release stamped before a moment
finds its allocation by uuid first). Every claim inserted and released
maintained them: two B-trees fewer to write per claim and per release.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_allocations_instance_group", table_name="allocations")
    op.drop_index("ix_allocations_created_at", table_name="allocations")


def downgrade() -> None:
    op.create_index("ix_allocations_created_at", "allocations",
                    ["created_at"])
    op.create_index("ix_allocations_instance_group", "allocations",
                    ["instance_group"])
