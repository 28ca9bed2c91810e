"""Alembic environment: runs on the connection handed in by schema.py."""

from alembic import context

from scheduler.db import models

connection = context.config.attributes["connection"]
context.configure(connection=connection,
                  target_metadata=models.Base.metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
