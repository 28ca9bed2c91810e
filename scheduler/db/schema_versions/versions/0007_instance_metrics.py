"""The instance entries of a node's report in a column of their own
(``compute_nodes.instance_metrics``), so that the schedulers' refreshes
read the host's own metrics without the instance entries, which
outnumber them on a busy node and which only balancers read. NULL: the
node reports none, or its writer keeps them in ``metrics`` (an agent
older than this revision), where the schedulers read them as before.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

from scheduler.db.models import LongText

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("compute_nodes") as batch:
        batch.add_column(sa.Column("instance_metrics", LongText))
