"""The Keystone domain of a permission's user and of a policy's creator.

Permissions and the ownership of unattached policies matched on the user
name alone, so that a user of another Keystone domain with the same name
borrowed them. Both now name the user's domain by its id (at most 64
characters, as Keystone's own); empty for an htpasswd user, and for a
Keystone user of the ``default`` domain, which is what every existing
row meant.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

OLD_UNIQUE = "uniq_permissions0user_name0role0cluster"
NEW_UNIQUE = "uniq_permissions0user_name0user_domain0role0cluster"


def upgrade() -> None:
    # batch: SQLite changes a constraint by copying the table.
    with op.batch_alter_table("permissions") as batch:
        batch.add_column(sa.Column("user_domain", sa.String(64),
                                   nullable=False, server_default=""))
        batch.drop_constraint(OLD_UNIQUE, type_="unique")
    # The server default filled the existing rows; new ones name theirs.
    with op.batch_alter_table("permissions") as batch:
        batch.alter_column("user_domain", server_default=None)
    with op.batch_alter_table("permissions") as batch:
        batch.create_unique_constraint(
            NEW_UNIQUE, ["user_name", "user_domain", "role", "cluster"])
    with op.batch_alter_table("scheduling_policies") as batch:
        batch.add_column(sa.Column("created_by_domain", sa.String(64),
                                   nullable=False, server_default=""))
    with op.batch_alter_table("scheduling_policies") as batch:
        batch.alter_column("created_by_domain", server_default=None)
