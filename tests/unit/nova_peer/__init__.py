"""Nova's scheduler unit tests, ported to the project's terms: one
table-driven module per plugin (see ``support``)."""
