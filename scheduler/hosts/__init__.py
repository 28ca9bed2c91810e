"""Hosts as the scheduler sees them: their state (the plugin API), the
table of columns filters and weighers read, reported and instance
metrics, and the host cache that builds them from the database."""
