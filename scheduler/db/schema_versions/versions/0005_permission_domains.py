"""The Keystone domain of a permission's user.

Permissions matched on the user name alone, so that a user of another
Keystone domain with the same name borrowed the grants. A permission
now names the user's domain (a Keystone domain id or name, at most 64
characters as Keystone's own); empty for an htpasswd user, and for a
Keystone user of the ``default`` domain, which is what every existing
grant meant.

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
