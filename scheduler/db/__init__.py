"""The data-access layer: engines, the schema, and every SQL statement
the scheduler, the agent and the REST API run (see docs/architecture.md,
"Where things live"). It imports nothing of the scheduler above it."""
