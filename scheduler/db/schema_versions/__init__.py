"""Alembic migrations of the scheduler's schema."""

#: Options of every table the migrations create. On MariaDB/MySQL a table
#: otherwise takes its database's default character set, latin1 on many
#: servers, which refuses text outside it (error 1366); utf8mb4 stores
#: any Unicode text, and its binary collation compares it byte for byte,
#: as PostgreSQL and SQLite do (the names are compared in Python).
TABLE_OPTIONS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}
