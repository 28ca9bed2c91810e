"""What the node's migration agent records while it carries a planned
migration out: progress, the reason of a failure or cancellation, which
agent holds the move and its lease (heartbeat), when it started, and a
cancellation asked for by ``scheduler-manage migrations cancel``.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

from scheduler.db.models import PreciseDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("migrations") as batch:
        batch.add_column(sa.Column("progress", sa.Integer))
        batch.add_column(sa.Column("reason", sa.String(255)))
        batch.add_column(sa.Column("agent", sa.String(255)))
        batch.add_column(sa.Column("started_at", PreciseDateTime))
        batch.add_column(sa.Column("heartbeat_at", PreciseDateTime))
        batch.add_column(sa.Column("cancel_requested", sa.Boolean,
                                   nullable=False,
                                   server_default=sa.false()))
    # The server default filled the existing rows; new ones set theirs.
    with op.batch_alter_table("migrations") as batch:
        batch.alter_column("cancel_requested", server_default=None)

