"""Statements on the driver's cursor answer as Connection.execute does."""

import datetime
import inspect
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler.claims import Usage
from scheduler.claims.store import Claims
from scheduler.db import claim_sql
from scheduler.db import driver
from scheduler.db import host_queries
from scheduler.db import policy_sql
from scheduler.db.driver import DriverStatement
from scheduler.db.tables import ALLOCATIONS
from scheduler.db.tables import NODES
from scheduler.db.tables import POLICY_GENERATION
from tests.fakes import add_node

ROW = host_queries.select(NODES, host_queries.NodeRow)


def test_rows_are_converted_as_sqlalchemy_converts_them(engine):
    add_node(engine, "a", disabled=True, cpu_allocation_ratio=1.5)
    add_node(engine, "b")
    statement = DriverStatement(ROW.order_by(NODES.c.id))
    with engine.connect() as connection:
        expected = [tuple(row) for row in connection.execute(
            ROW.order_by(NODES.c.id))]
        got = statement.rows(connection, {})
        # The conversions found by the first run are reused.
        again = statement.rows(connection, {})
    assert got == again == expected
    # SQLite stores both as text and integers: converted back.
    assert isinstance(got[0][NODES.c.keys().index("id")], int)
    assert got[0][host_queries.NodeRow._fields.index("disabled")] is True
    changed_at = got[0][host_queries.NodeRow._fields.index("changed_at")]
    assert isinstance(changed_at, datetime.datetime)


def test_kept_conversions_follow_the_values_read(engine, monkeypatch):
    # Stamps shared by rows, then moved, past what a column keeps (two
    # here): every read converts as SQLAlchemy does, none is stale.
    monkeypatch.setattr(driver, "_KEPT", 2)
    start = datetime.datetime(2026, 1, 1, 0, 0, 0, 5)
    nodes = [add_node(engine, f"n{number}", changed_at=start,
                      disabled=number % 2 == 0,
                      reported=None if number == 3 else start)
             for number in range(4)]
    statement = DriverStatement(ROW.order_by(NODES.c.id))
    query = ROW.order_by(NODES.c.id)
    with engine.connect() as connection:
        for moved in range(6):
            with engine.begin() as writing:
                writing.execute(NODES.update().where(
                    NODES.c.id == nodes[moved % 4]).values(
                        changed_at=start + moved * datetime.timedelta(
                            microseconds=1),
                        disabled=moved % 2 == 1))
            got = statement.rows(connection, {})
            assert got == [tuple(row) for row in connection.execute(query)]
    changed = host_queries.NodeRow._fields.index("changed_at")
    assert [row[changed].microsecond for row in got] == [9, 10, 7, 8]


def test_parameters_are_converted_and_literals_kept(engine):
    old = add_node(engine, "old", changed_at=datetime.datetime(2020, 1, 1))
    new = add_node(engine, "new")
    statement = DriverStatement(
        sa.select(NODES.c.id, policy_sql.GENERATION).where(
            NODES.c.changed_at > sa.bindparam("after")),
        shape=lambda row: row[0])
    with engine.begin() as connection:
        connection.execute(POLICY_GENERATION.update().values(
            generation=7))
    with engine.connect() as connection:
        after = datetime.datetime(2021, 1, 1)
        assert statement.rows(connection, {"after": after}) == [new]
        assert statement.rows(connection, {
            "after": datetime.datetime(2019, 1, 1)}) == [old, new]
        # The probe's own parameter (id = 1) rides along.
        raw = DriverStatement(statement.statement)
        assert raw.rows(connection, {"after": after}) == [(new, 7)]


def test_statements_go_through_the_connection_hooks(engine):
    statement = DriverStatement(sa.select(NODES.c.id))
    seen = []

    def record(_conn, _cursor, text, *_args) -> None:
        seen.append(text)

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        with engine.connect() as connection:
            statement.rows(connection, {})
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    assert len(seen) == 1 and "compute_nodes" in seen[0]


def test_errors_are_wrapped_as_sqlalchemy_wraps_them(engine):
    missing = sa.table("no_such_table", sa.column("x"))
    statement = DriverStatement(sa.select(missing.c.x))
    with engine.connect() as connection:
        with pytest.raises(sa_exc.OperationalError) as raised:
            statement.rows(connection, {})
        assert not raised.value.connection_invalidated
        # The connection stays usable.
        assert connection.execute(sa.select(sa.literal(1))).scalar() == 1


@pytest.mark.parametrize("asked", [1, 2, 3, 5])
def test_claims_on_nodes_are_their_allocation_rows(scheduler_config, engine,
                                                   asked):
    nodes = [add_node(engine, name) for name in "abcde"]
    store = Claims(scheduler_config)
    for count, node in enumerate(nodes):
        for _ in range(count % 3):
            store.claim(node, str(uuid.uuid4()), Usage(1, 256, 1))
    wanted = nodes[:asked]
    with engine.connect() as connection:
        expected = [host_queries.AllocationRow._make(row) for row
                    in connection.execute(host_queries.select(
                        ALLOCATIONS, host_queries.AllocationRow).where(
                        ALLOCATIONS.c.compute_node_id.in_(wanted)))]
        got = host_queries.claims_on(connection, wanted)
    assert sorted(got) == sorted(expected)
    assert len(got) == sum(count % 3 for count in range(asked))
    assert all(isinstance(row.created_at, datetime.datetime) for row in got)


def test_expanding_parameters_are_refused(engine):
    statement = DriverStatement(host_queries.NODES_BY_ID)
    with engine.connect() as connection, pytest.raises(
            ValueError, match="expanding"):
        statement.rows(connection, {"ids": [1]})


def test_scan_reads_the_probes_without_changed_rows(engine):
    node = add_node(engine, "a")
    with engine.begin() as connection:
        connection.execute(POLICY_GENERATION.update().values(
            generation=3))
    probes = [policy_sql.GENERATION]
    with engine.connect() as connection:
        before = datetime.datetime(2000, 1, 1)
        rows, probed = host_queries.scan_after(connection, before, probes)
        assert [row.id for row in rows] == [node] and probed == (3,)
        later = datetime.datetime(2100, 1, 1)
        assert host_queries.scan_after(connection, later, probes) == (
            [], (3,))
        assert host_queries.scan_after(connection, later) == ([], ())


def test_the_private_connection_methods_keep_their_signatures():
    # driver.py calls these two; setup.cfg caps SQLAlchemy below the
    # next minor release, and this fails first if one changes.
    assert list(inspect.signature(
        sa.Connection._cursor_execute).parameters) == [
            "self", "cursor", "statement", "parameters", "context"]
    assert list(inspect.signature(
        sa.Connection._handle_dbapi_exception).parameters)[:6] == [
            "self", "e", "statement", "parameters", "cursor", "context"]


def test_a_cursor_that_cannot_be_opened_is_a_wrapped_error(engine):
    with engine.connect() as connection:
        connection.connection.dbapi_connection.close()
        with pytest.raises(sa_exc.DBAPIError):
            DriverStatement(sa.select(sa.literal(1))).rows(connection, {})


def test_run_changes_rows_in_the_transaction_of_the_connection(engine):
    node = add_node(engine, "a")
    bump = claim_sql.BUMP
    when = datetime.datetime(2030, 1, 2, 3, 4, 5, 6)

    def changed_at() -> datetime.datetime:
        with engine.connect() as connection:
            return connection.execute(sa.select(NODES.c.changed_at).where(
                NODES.c.id == node)).scalar_one()

    with claim_sql.write_transaction(engine) as connection:
        assert bump.run(connection, {"node_id": node, "now": when}) == 1
        assert bump.run(connection, {"node_id": node + 1, "now": when}) == 0
    # Converted as SQLAlchemy converts it (SQLite keeps text).
    assert changed_at() == when
    with pytest.raises(RuntimeError), \
            claim_sql.write_transaction(engine) as connection:
        bump.run(connection, {"node_id": node,
                              "now": datetime.datetime(2031, 1, 1)})
        raise RuntimeError("rolled back")
    assert changed_at() == when
