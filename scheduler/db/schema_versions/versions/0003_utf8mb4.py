"""MariaDB/MySQL tables in utf8mb4, whatever the database's default.

Tables created by 0001 and 0002 before they named their character set
took the database's default: latin1 on many servers, where any text
outside Latin-1 (a server group, a cluster name) failed its INSERT with
error 1366. This converts them (and the database's default, for tables
of later migrations) to utf8mb4 with a binary collation; existing text
is kept. Nothing to do on other databases, which store Unicode.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

from scheduler.db.schema_versions import TABLE_OPTIONS

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TABLES = ("compute_nodes", "allocations", "migrations",
          "utilization_samples")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name not in ("mysql", "mariadb"):
        return
    charset = TABLE_OPTIONS["mysql_charset"]
    collation = TABLE_OPTIONS["mysql_collate"]
    database = bind.execute(sa.text("SELECT DATABASE()")).scalar()
    preparer = bind.dialect.identifier_preparer
    op.execute(f"ALTER DATABASE {preparer.quote_identifier(database)} "
               f"CHARACTER SET {charset} COLLATE {collation}")
    # Foreign keys between the tables hold integers only, so converting
    # one table at a time leaves no key between two character sets.
    for table in TABLES:
        current = bind.execute(sa.text(
            "SELECT table_collation FROM information_schema.tables "
            "WHERE table_schema = DATABASE() AND table_name = :table"),
            {"table": table}).scalar()
        if current != collation:
            op.execute(f"ALTER TABLE {preparer.quote_identifier(table)} "
                       f"CONVERT TO CHARACTER SET {charset} "
                       f"COLLATE {collation}")
