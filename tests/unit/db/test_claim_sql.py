"""The write transaction of claims and releases on SQLite: what it sends,
and what a writer finding the lock taken gets."""

import contextlib
import datetime
import sqlite3
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler.db import claim_sql
from tests.fakes import add_node

WHEN = datetime.datetime(2030, 1, 2, 3, 4, 5)


@contextlib.contextmanager
def traced(engine: sa.Engine) -> Iterator[list[str]]:
    """The statements SQLite runs on the engine's connections checked
    out during the block (its trace callback: what reached the file)."""
    sent: list[str] = []

    def trace(dbapi_connection, _record, _proxy) -> None:
        dbapi_connection.set_trace_callback(sent.append)

    sa.event.listen(engine, "checkout", trace)
    try:
        yield sent
    finally:
        sa.event.remove(engine, "checkout", trace)


def _verbs(sent: list[str]) -> list[str]:
    return [" ".join(statement.split()[:2]) if statement.startswith("BEGIN")
            else statement.split()[0] for statement in sent]


@pytest.mark.parametrize("end, sent", [
    ("commit", ["BEGIN IMMEDIATE", "UPDATE", "COMMIT"]),
    ("raise", ["BEGIN IMMEDIATE", "UPDATE", "ROLLBACK"]),
    ("rollback", ["BEGIN IMMEDIATE", "UPDATE", "ROLLBACK"]),
])
def test_the_write_lock_is_taken_first_and_the_block_ends_it(engine, end,
                                                             sent):
    node = add_node(engine, "a")
    with traced(engine) as statements, contextlib.suppress(RuntimeError), \
            claim_sql.write_transaction(engine) as connection:
        claim_sql.BUMP.run(connection, {"node_id": node, "now": WHEN})
        if end == "raise":
            raise RuntimeError("rolled back")
        if end == "rollback":
            connection.rollback()
    assert _verbs(statements) == sent
    with engine.connect() as connection:
        # Back in the pool with no transaction open.
        assert not connection.connection.dbapi_connection.in_transaction
        generation = connection.execute(sa.select(sa.text(
            "generation FROM compute_nodes"))).scalar_one()
    assert generation == (1 if end == "commit" else 0)


def test_a_writer_finding_the_lock_taken_fails_on_begin(engine):
    """Another writer holds the file's write lock past the busy timeout:
    the block fails on its BEGIN IMMEDIATE, before reading anything, as
    SQLAlchemy wraps the driver's error, and its connection stays
    usable."""
    add_node(engine, "a")

    def impatient(dbapi_connection, _record, _proxy) -> None:
        dbapi_connection.execute("PRAGMA busy_timeout = 50")

    holder = sqlite3.connect(engine.url.database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    sa.event.listen(engine, "checkout", impatient)
    try:
        with pytest.raises(sa_exc.OperationalError) as raised, \
                claim_sql.write_transaction(engine):
            pytest.fail("the block ran without the write lock")
    finally:
        sa.event.remove(engine, "checkout", impatient)
        holder.execute("ROLLBACK")
        holder.close()
    assert raised.value.statement == "BEGIN IMMEDIATE"
    assert "locked" in str(raised.value.orig)
    assert not raised.value.connection_invalidated
    with claim_sql.write_transaction(engine) as connection:
        assert connection.execute(sa.text("SELECT 1")).scalar() == 1
