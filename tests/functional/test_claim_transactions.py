"""The claims' transactions on each database: a claim surviving its
pooled connections dropped, the isolation the write transaction reads
in, and a statement on the driver's cursor first in it
(scheduler/db/claim_sql.py)."""

import contextlib
import uuid
from collections.abc import Callable

import pytest
import sqlalchemy as sa

from scheduler import claims
from scheduler.db import api as db_api
from scheduler.db import claim_sql
from scheduler.db import models
from tests.functional.claims_harness import one_node
from tests.functional.fault_harness import ALLOCATIONS
from tests.functional.fault_harness import NODES


def _claims_once_after_drop(url: str,
                            drop: Callable[[sa.Connection], int]) -> None:
    """A claim after ``drop`` (on a connection of its own) ended the
    database's other sessions, the claims' pooled ones among them, runs
    once more on a new connection and claims exactly once."""
    conf, engine, node = one_node(url, vcpus=8, memory_mb=8192)
    store = claims.Claims(conf)
    store.claim(node, str(uuid.uuid4()), claims.Usage(1, 512, 1))
    killer = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with killer.begin() as connection:
        assert drop(connection) >= 1
    killer.dispose()
    claim = store.claim(node, str(uuid.uuid4()), claims.Usage(1, 512, 1))
    assert not claim.existing and claim.generation == 2
    with engine.connect() as connection:
        assert connection.execute(sa.select(sa.func.count()).select_from(
            ALLOCATIONS)).scalar() == 2
    db_api.dispose_engines()


def test_one_statement_claim_survives_a_dropped_connection(postgresql_url):
    """The claim on the driver's cursor keeps the claims' retry."""
    _claims_once_after_drop(postgresql_url, lambda connection: (
        connection.execute(sa.text(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()")).scalar()))


def test_a_claim_survives_a_dropped_connection_on_mariadb(mysql_url):
    """The claim's transaction on MariaDB begins with a statement on the
    driver's cursor, the first to meet the dropped connection."""
    def kill(connection: sa.Connection) -> int:
        sessions = connection.execute(sa.text(
            "SELECT id FROM information_schema.processlist "
            "WHERE db = DATABASE() AND id <> CONNECTION_ID()")).scalars().all()
        for session in sessions:
            connection.execute(sa.text(f"KILL {int(session)}"))
        return len(sessions)

    _claims_once_after_drop(mysql_url, kill)


def test_a_write_transaction_reads_each_commit_before_it_on_mariadb(
        mysql_url):
    """READ COMMITTED for the write transaction alone (the claim's check
    must see the claims committed while it waited for the row lock): a
    statement in it reads what another session committed after the
    transaction's first read, and the next transaction on the same
    pooled connection is back to the server's REPEATABLE READ."""
    conf, _, node = one_node(mysql_url, vcpus=8, generation=5)
    engine = db_api.get_engine(conf, pre_ping=False)
    other = sa.create_engine(mysql_url, poolclass=sa.pool.NullPool)
    generation = sa.select(NODES.c.generation).where(NODES.c.id == node)

    def bump_elsewhere() -> None:
        with other.begin() as connection:
            connection.execute(NODES.update().where(NODES.c.id == node)
                               .values(generation=NODES.c.generation + 1))

    with claim_sql.write_transaction(engine) as connection:
        before = connection.execute(generation).scalar_one()
        bump_elsewhere()
        assert (before, connection.execute(generation).scalar_one()) == (
            5, 6)
    with engine.connect() as connection:
        before = connection.execute(generation).scalar_one()
        bump_elsewhere()
        assert (before, connection.execute(generation).scalar_one()) == (
            6, 6)
        connection.rollback()
    other.dispose()
    db_api.dispose_engines()


@pytest.mark.parametrize("end", ["commit", "raise", "rollback"])
def test_a_driver_statement_first_in_a_write_transaction(db_url, end):
    """A statement on the driver's cursor first in a write transaction
    (on PostgreSQL the request path's engine is in autocommit; on SQLite
    and MariaDB the block's own first statement is one too) is committed
    with it, or rolled back with it (by an exception, or by the block
    itself, as a release finding its allocation gone does): SQLAlchemy
    began the transaction, not the driver alone."""
    conf, _, node = one_node(db_url, vcpus=8, generation=5)
    engine = db_api.get_engine(conf, pre_ping=False)
    with contextlib.suppress(RuntimeError), \
            claim_sql.write_transaction(engine) as connection:
        assert claim_sql.BUMP.run(connection, {
            "node_id": node, "now": models.utcnow()}) == 1
        if end == "raise":
            raise RuntimeError("rolled back")
        if end == "rollback":
            connection.rollback()
    with engine.connect() as connection:
        generation = connection.execute(sa.select(NODES.c.generation).where(
            NODES.c.id == node)).scalar_one()
    assert generation == (6 if end == "commit" else 5)
    db_api.dispose_engines()
