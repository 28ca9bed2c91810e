"""Ending a move races the other writers of its row: a take, a cancel, a
reaper's steal. Each end is conditional on the row as it was read, in
the transaction that moves the claims, so the loser is refused rather
than overwriting the winner (the claims then follow the row). On SQLite
the interleaving is forced by running the other writer's statement
between the read and the write, which is what READ COMMITTED allows on
PostgreSQL and MariaDB (tests/functional/test_migration_races.py runs
the same races on two connections there)."""

from compute_monitor.migration import store as store_mod
from scheduler.db import migration_agent_sql
from scheduler.db import migration_sql
from scheduler.db import models
from tests.unit.compute_monitor.migration.fakes import INSTANCE
from tests.unit.compute_monitor.migration.fakes import claims
from tests.unit.compute_monitor.migration.fakes import fleet
from tests.unit.compute_monitor.migration.fakes import plan
from tests.unit.compute_monitor.migration.fakes import row


def _after_the_read(monkeypatch, meanwhile) -> None:
    """Run ``meanwhile(connection, uuid)`` right after the ending
    transaction reads the move (once)."""
    real = migration_sql.active_one

    def read_then(connection, uuid, *args, **kwargs):
        found = real(connection, uuid, *args, **kwargs)
        monkeypatch.setattr(migration_sql, "active_one", real)
        meanwhile(connection, uuid)
        return found

    monkeypatch.setattr(migration_sql, "active_one", read_then)


def test_a_cancel_losing_to_a_take_flags_the_running_move(agent_config,
                                                          monkeypatch):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    store = store_mod.AgentStore(agent_config, "h0:1")
    _after_the_read(monkeypatch, lambda connection, uuid: (
        migration_agent_sql.take(connection, uuid, "h0:1",
                                 models.utcnow())))
    assert store._migrations.cancel(move, "operator") == "running"
    taken = row(engine, move)
    assert (taken["state"], taken["agent"], taken["cancel_requested"]) == (
        "running", "h0:1", True)
    assert claims(engine, move) == [h1]
    assert store.finish(move, "cancelled", "cancelled by an operator")
    assert claims(engine, INSTANCE) == [h0] and claims(engine, move) == []


def _reaper_fails_it(connection, uuid) -> None:
    """Agent h1:2 steals the move and records it failed."""
    stale = migration_agent_sql.one(connection, uuid)
    assert migration_agent_sql.steal(connection, stale, "h1:2",
                                     models.utcnow())
    found = migration_sql.active_one(connection, uuid, None, "h1:2")
    migration_sql.move_claims(connection, found, False, models.utcnow())
    migration_sql.change_state(connection, uuid, "failed", models.utcnow(),
                               reason="reaper")


def test_an_owner_losing_to_a_reaper_is_refused(agent_config, monkeypatch):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    owner = store_mod.AgentStore(agent_config, "h0:1")
    assert owner.take(owner.planned_from(h0)[0]) is None
    _after_the_read(monkeypatch, _reaper_fails_it)
    assert not owner.finish(move, "completed", None)
    assert row(engine, move)["state"] == "failed"
    assert claims(engine, INSTANCE) == [h0] and claims(engine, move) == []
    # The guest did land: the owner's correction moves the claim.
    assert owner.record_landed(move)
    landed = row(engine, move)
    assert (landed["state"], landed["reason"]) == (
        "completed", "completed after agent h0:1 lost its lease; corrected "
        "by that agent")
    assert claims(engine, INSTANCE) == [h1]
    assert not owner.record_landed(move)
