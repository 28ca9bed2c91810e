"""Claims in the database: capacity checks, idempotency, release."""

import datetime
import threading
import time

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler import claims
from scheduler.db import api as db_api
from scheduler.db import claim_sql
from scheduler.db import models
from scheduler.db.driver import DriverStatement
from tests.unit.claims.fakes import ALLOCATIONS
from tests.unit.claims.fakes import NODES
from tests.unit.claims.fakes import ONE
from tests.unit.claims.fakes import add_node
from tests.unit.claims.fakes import allocations
from tests.unit.claims.fakes import new_uuid


def node_row(engine, node_id: int):
    with engine.connect() as connection:
        return connection.execute(
            sa.select(NODES).where(NODES.c.id == node_id)).one()


def test_claim_inserts_and_bumps_the_node(engine, store):
    node = add_node(engine, "a")
    before = node_row(engine, node)
    instance = new_uuid()
    claim = store.claim(node, instance, ONE, group="g1")
    assert (claim.host, claim.nodename, claim.node_uuid) == (
        "a", "a.example.org", before.uuid)
    assert not claim.existing
    row, = allocations(engine)
    assert (row.uuid, row.instance_uuid, row.compute_node_id, row.vcpus,
            row.memory_mb, row.disk_gb, row.instance_group) == (
        claim.allocation_id, instance, node, 1, 512, 1, "g1")
    after = node_row(engine, node)
    assert after.generation == before.generation + 1
    assert after.changed_at > before.changed_at
    # Newer than the node's last report: a pending claim.
    assert row.created_at > after.metrics_updated_at


@pytest.mark.parametrize("usage, unit", [
    (claims.Usage(5, 512, 1), "vCPUs"),
    (claims.Usage(1, 8193, 1), "MB of RAM"),
    (claims.Usage(1, 512, 101), "GB of disk"),
])
def test_claim_beyond_capacity_conflicts(engine, store, usage, unit):
    node = add_node(engine, "a")
    generation = node_row(engine, node).generation
    with pytest.raises(claims.ClaimConflict) as error:
        store.claim(node, new_uuid(), usage)
    assert unit in str(error.value) and "a" in str(error.value)
    assert allocations(engine) == []
    assert node_row(engine, node).generation == generation


def test_claims_fill_a_node_exactly(engine, store):
    node = add_node(engine, "a", vcpus=2, memory_mb=100000)
    store.claim(node, new_uuid(), ONE)
    store.claim(node, new_uuid(), ONE)
    with pytest.raises(claims.ClaimConflict, match="2 of 2 x 1 claimed"):
        store.claim(node, new_uuid(), ONE)


def test_node_ratio_wins_over_the_configured_one(conf, engine, store):
    conf.set_override("cpu_allocation_ratio", 1.0, group="filter_scheduler")
    node = add_node(engine, "a", vcpus=1, cpu_allocation_ratio=3.0)
    for _ in range(3):
        store.claim(node, new_uuid(), ONE)
    with pytest.raises(claims.ClaimConflict, match="x 3 claimed"):
        store.claim(node, new_uuid(), ONE)


def test_configured_ratio_applies_without_a_node_ratio(conf, engine, store):
    conf.set_override("cpu_allocation_ratio", 2.0, group="filter_scheduler")
    node = add_node(engine, "a", vcpus=1, cpu_allocation_ratio=None)
    store.claim(node, new_uuid(), ONE)
    store.claim(node, new_uuid(), ONE)
    with pytest.raises(claims.ClaimConflict):
        store.claim(node, new_uuid(), ONE)


def test_resource_not_asked_for_is_not_checked(engine, store):
    # As in the filters: a flavor without disk fits an overcommitted disk.
    node = add_node(engine, "a", local_gb=1)
    store.claim(node, new_uuid(), claims.Usage(1, 512, 1))
    store.claim(node, new_uuid(), claims.Usage(1, 512, 0))


def test_missing_node_conflicts(store):
    with pytest.raises(claims.ClaimConflict, match="no longer exists"):
        store.claim(4242, new_uuid(), ONE)


def test_second_claim_for_an_instance_returns_the_first(engine, store):
    first, second = add_node(engine, "a"), add_node(engine, "b")
    instance = new_uuid()
    claim = store.claim(first, instance, ONE)
    again = store.claim(second, instance, ONE)
    assert again.existing
    assert (again.allocation_id, again.host) == (claim.allocation_id, "a")
    assert len(allocations(engine)) == 1
    assert node_row(engine, second).generation == 0


def test_find_returns_held_claims_only(engine, store):
    node = add_node(engine, "a")
    held = store.claim(node, new_uuid(), ONE)
    found = store.find([held.instance_uuid, new_uuid()])
    assert list(found) == [held.instance_uuid]
    assert found[held.instance_uuid] == claims.Claim(
        **{**held.__dict__, "existing": True, "generation": None,
           "changed_at": None})
    assert store.find([]) == {}


def test_a_new_claim_tells_the_generation_and_change_time_it_left(
        engine, store):
    node = add_node(engine, "a")
    first = store.claim(node, new_uuid(), ONE)
    second = store.claim(node, new_uuid(), ONE)
    row = node_row(engine, node)
    assert (first.generation, second.generation) == (1, 2)
    assert (second.generation, second.changed_at) == (row.generation,
                                                      row.changed_at)
    again = store.claim(node, second.instance_uuid, ONE)
    assert again.existing and again.generation is None


def test_find_reads_many_uuids_in_chunks(engine, store):
    node = add_node(engine, "a", vcpus=1000, memory_mb=10**6,
                    local_gb=10**4)
    held = [store.claim(node, new_uuid(), ONE).instance_uuid
            for _ in range(3)]
    wanted = [new_uuid() for _ in range(1200)] + held
    assert sorted(store.find(wanted)) == sorted(held)


def test_release_frees_and_bumps(engine, store):
    node = add_node(engine, "a", vcpus=1)
    instance = new_uuid()
    store.claim(node, instance, ONE)
    generation = node_row(engine, node).generation
    assert store.release(instance) is True
    assert allocations(engine) == []
    assert node_row(engine, node).generation == generation + 1
    assert store.release(instance) is False
    # The room is back.
    store.claim(node, new_uuid(), ONE)


def test_release_allocation_by_its_own_uuid(engine, store):
    node = add_node(engine, "a")
    claim = store.claim(node, new_uuid(), ONE)
    assert store.release_allocation(new_uuid()) is False
    assert store.release_allocation(claim.allocation_id) is True
    assert allocations(engine) == []


def test_keep_of_a_released_claim_is_false_and_undoes_its_bump(engine,
                                                                store):
    node = add_node(engine, "a")
    instance = new_uuid()
    claim = store.claim(node, instance, ONE)
    assert store.keep(claim) is True
    store.release(instance)
    generation = node_row(engine, node).generation
    assert store.keep(claim) is False
    assert node_row(engine, node).generation == generation
    # Nothing was left open: the node takes the next claim.
    store.claim(node, new_uuid(), ONE)


def test_a_release_whose_delete_finds_nothing_undoes_its_bump(engine,
                                                              store):
    # Another release deleting the allocation between the node's read and
    # the delete: the bump is rolled back and nothing is released.
    node = add_node(engine, "a")
    claim = store.claim(node, new_uuid(), ONE)
    generation = node_row(engine, node).generation
    raced = claim_sql.Release(
        claim_sql.RELEASE_ALLOCATION.node, DriverStatement(
            ALLOCATIONS.delete().where(sa.false()
                                       & (ALLOCATIONS.c.uuid == sa.bindparam(
                                           "allocation_id")))))
    assert store._release_once(
        raced, {"allocation_id": claim.allocation_id}) is False
    assert node_row(engine, node).generation == generation
    assert len(allocations(engine)) == 1
    assert store.release_allocation(claim.allocation_id) is True


def test_times_are_written_and_compared_as_the_column_writes_them(
        engine, store, monkeypatch):
    # A whole second: sqlite3 alone would write it without microseconds,
    # and that text sorts below the column's own.
    stamp = datetime.datetime(2030, 1, 1, 12, 0, 0)
    monkeypatch.setattr(models, "utcnow", lambda: stamp)
    node = add_node(engine, "a")
    claim = store.claim(node, new_uuid(), ONE)
    with engine.connect() as connection:
        written = connection.execute(sa.select(
            sa.cast(ALLOCATIONS.c.created_at, sa.String))).scalar_one()
        expected = connection.execute(sa.select(sa.cast(sa.literal(
            stamp, ALLOCATIONS.c.created_at.type), sa.String))).scalar_one()
    assert written == expected
    # Rows matched, not changed: a keep stamping the same time is done.
    assert store.keep(claim) is True and store.keep(claim) is True
    one = datetime.timedelta(microseconds=1)
    assert store.release_allocation(claim.allocation_id,
                                    made_before=stamp - one) is False
    assert store.release_allocation(claim.allocation_id,
                                    made_before=stamp) is True
    assert allocations(engine) == []


class _Orig(Exception):
    def __init__(self, *args, sqlstate=None):
        super().__init__(*args)
        self.sqlstate = sqlstate


@pytest.mark.parametrize("orig, transient", [
    (_Orig("deadlock", sqlstate="40P01"), True),
    (_Orig("serialization", sqlstate="40001"), True),
    (_Orig(1213, "Deadlock found"), True),
    (_Orig(1205, "Lock wait timeout"), True),
    (_Orig(1062, "Duplicate entry"), False),
    (_Orig("database is locked"), False),
])
def test_transient_errors(orig, transient):
    error = sa_exc.OperationalError("SELECT 1", {}, orig)
    assert claims.is_transient(error) is transient
    assert claims.is_transient(ValueError("x")) is False


def test_transient_error_is_retried(engine, store, monkeypatch):
    node = add_node(engine, "a")
    real = store._claim
    calls = []

    def flaky(*args):
        calls.append(args)
        if len(calls) == 1:
            raise sa_exc.OperationalError(
                "INSERT", {}, _Orig("deadlock", sqlstate="40P01"))
        return real(*args)

    monkeypatch.setattr(store, "_claim", flaky)
    store.claim(node, new_uuid(), ONE)
    assert len(calls) == 2
    assert len(allocations(engine)) == 1


def test_other_database_errors_propagate_and_roll_back(engine, store,
                                                       monkeypatch):
    node = add_node(engine, "a")

    def fail(conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith("INSERT INTO ALLOCATIONS"):
            raise sa_exc.OperationalError(statement, {}, _Orig("disk I/O"))

    sa.event.listen(store.engine, "before_cursor_execute", fail)
    try:
        with pytest.raises(sa_exc.OperationalError):
            store.claim(node, new_uuid(), ONE)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", fail)
    # The bump before the failing insert was rolled back.
    assert node_row(engine, node).generation == 0
    assert allocations(engine) == []
    store.claim(node, new_uuid(), ONE)


def test_sqlite_claims_are_serialised(engine, conf):
    """BEGIN IMMEDIATE: with the window between the capacity check and
    the insert widened, concurrent claims still never overfill a node."""
    node = add_node(engine, "a", vcpus=3)
    claims_engine = claims.Claims(conf).engine

    def slow_sum(conn, cursor, statement, *args):
        if "sum(" in statement.lower():
            time.sleep(0.02)

    sa.event.listen(claims_engine, "after_cursor_execute", slow_sum)
    results: list[str] = []
    start = threading.Barrier(8)

    def worker():
        store = claims.Claims(conf)
        start.wait()
        for _ in range(3):
            try:
                store.claim(node, new_uuid(), ONE)
                results.append("claimed")
            except claims.ClaimConflict:
                results.append("conflict")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sa.event.remove(claims_engine, "after_cursor_execute", slow_sum)
    assert results.count("claimed") == 3
    assert results.count("conflict") == 21
    assert len(allocations(engine)) == 3


def test_concurrent_duplicate_claims_make_one_allocation(engine, conf):
    nodes = [add_node(engine, f"h{i}") for i in range(4)]
    instance = new_uuid()
    got = []
    start = threading.Barrier(4)

    def worker(node):
        start.wait()
        got.append(claims.Claims(conf).claim(node, instance, ONE))

    threads = [threading.Thread(target=worker, args=(n,)) for n in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({c.allocation_id for c in got}) == 1
    assert sum(not c.existing for c in got) == 1
    assert len(allocations(engine)) == 1


def _dropped(statement: str) -> sa_exc.OperationalError:
    return sa_exc.OperationalError(statement, {}, _Orig("server closed the "
                                                        "connection"),
                                   connection_invalidated=True)


def test_claims_engine_does_not_pre_ping(conf, store):
    assert store.engine.pool._pre_ping is False
    # SQLite (this suite's): one engine for every caller.
    assert db_api.get_engine(conf) is store.engine


def test_dropped_connection_is_retried_once(engine, store, monkeypatch):
    node = add_node(engine, "a")
    real = store._claim
    calls = []

    def dropped_once(*args):
        calls.append(args)
        if len(calls) == 1:
            raise _dropped("INSERT")
        return real(*args)

    monkeypatch.setattr(store, "_claim", dropped_once)
    claim = store.claim(node, new_uuid(), ONE)
    assert len(calls) == 2
    assert not claim.existing
    assert len(allocations(engine)) == 1


def test_connection_dropped_twice_propagates(engine, store, monkeypatch):
    node = add_node(engine, "a")
    calls = []

    def dropped(*args):
        calls.append(args)
        raise _dropped("INSERT")

    monkeypatch.setattr(store, "_claim", dropped)
    with pytest.raises(sa_exc.OperationalError):
        store.claim(node, new_uuid(), ONE)
    assert len(calls) == 2
    assert allocations(engine) == []


@pytest.mark.parametrize("vcpus", [2, 1], ids=["room-left", "filled"])
def test_claim_committed_before_the_connection_dropped_is_ours(
        engine, store, monkeypatch, vcpus):
    """The reply was lost, not the claim: the retry finds it under this
    call's allocation id and returns it as made here (so that a failing
    request releases it), not as one the instance held before, and not a
    conflict when it took the node's last room (which would leave the
    claim behind a call that failed)."""
    node = add_node(engine, "a", vcpus=vcpus)
    real = store._claim
    calls = []

    def committed_then_dropped(*args):
        calls.append(args)
        if len(calls) == 1:
            real(*args)
            raise _dropped("INSERT")
        return real(*args)

    monkeypatch.setattr(store, "_claim", committed_then_dropped)
    claim = store.claim(node, new_uuid(), ONE)
    assert len(calls) == 1  # found before claiming again
    assert not claim.existing
    assert claim.node_id == node
    assert [row.uuid for row in allocations(engine)] == [
        claim.allocation_id]


def _duplicate() -> sa_exc.IntegrityError:
    return sa_exc.IntegrityError("INSERT", {}, _Orig("duplicate key"))


def test_duplicate_key_races_are_run_three_times(engine, store, monkeypatch):
    node = add_node(engine, "a")
    calls = []

    def duplicate(*args):
        calls.append(args)
        raise _duplicate()

    monkeypatch.setattr(store, "_claim", duplicate)
    with pytest.raises(sa_exc.IntegrityError):
        store.claim(node, new_uuid(), ONE)
    assert len(calls) == 3


def test_failed_lookup_after_a_duplicate_key_is_not_retried(
        engine, store, monkeypatch):
    """Only the claim's own statements run again: a connection dropped
    while looking up the claim the instance holds ends the call."""
    node = add_node(engine, "a")
    calls, lookups = [], []

    def duplicate(*args):
        calls.append(args)
        raise _duplicate()

    def lookup_dropped(instance_uuids):
        lookups.append(instance_uuids)
        raise _dropped("SELECT")

    monkeypatch.setattr(store, "_claim", duplicate)
    monkeypatch.setattr(store, "find", lookup_dropped)
    with pytest.raises(sa_exc.OperationalError) as raised:
        store.claim(node, new_uuid(), ONE)
    assert raised.value.connection_invalidated
    assert (len(calls), len(lookups)) == (1, 1)


