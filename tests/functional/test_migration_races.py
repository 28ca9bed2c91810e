"""The migrations table's writers racing on two connections of a real
PostgreSQL and MariaDB server: a take, a cancel and the ends of a move
are each decided under the node locks, by a conditional write on the
row as it is once the locks are held. The first transaction is held
just after it locked the nodes, the second is seen waiting for those
locks in the server's own lock tables, then the first commits: the
second is refused, never overwriting the first (the claims follow the
row)."""

import datetime
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from oslo_config import cfg

from compute_monitor.migration import conf as agent_conf
from compute_monitor.migration import store as store_mod
from scheduler.db import api as db_api
from scheduler.db import migration_agent_sql
from scheduler.db import models
from scheduler.db import schema
from scheduler.placement import migrations as migrations_mod
from tests.unit.compute_monitor.migration.fakes import INSTANCE
from tests.unit.compute_monitor.migration.fakes import claims
from tests.unit.compute_monitor.migration.fakes import fleet
from tests.unit.compute_monitor.migration.fakes import plan
from tests.unit.compute_monitor.migration.fakes import row

#: The transaction held after its node locks runs in a thread so named.
HOLDER = "holder"
#: Bound on waiting for the second transaction to queue on the locks.
_QUEUE_TIMEOUT = 30

_WAITING = {
    "postgresql": "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                  "current_database() AND wait_event_type = 'Lock'",
    # The node lock is the only FOR UPDATE; unblocked it returns at once.
    "mysql": "SELECT count(*) FROM information_schema.processlist WHERE "
             "db = DATABASE() AND id <> CONNECTION_ID() AND info LIKE "
             "'%FOR UPDATE%'",
}


@pytest.fixture(params=[pytest.param(backend, marks=getattr(pytest.mark,
                                                            backend))
                        for backend in ("postgresql", "mysql")])
def agent_conf_on(request: pytest.FixtureRequest) -> Iterator[cfg.ConfigOpts]:
    """The agent's options on a fresh database of each server."""
    conf = cfg.ConfigOpts()
    agent_conf.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    conf.set_override("connection",
                      request.getfixturevalue(f"{request.param}_url"),
                      group="database")
    conf.set_override("host", "h0")
    schema.db_sync(db_api.get_engine(conf))
    yield conf
    db_api.dispose_engines()


class _Race:
    """Runs ``first`` in the holder thread, held after its node locks,
    and ``second`` in another until it waits for them; then lets
    ``first`` commit. Their results, first's then second's."""

    def __init__(self, conf: cfg.ConfigOpts,
                 monkeypatch: pytest.MonkeyPatch):
        self.engine = db_api.get_engine(conf)
        self.locked = threading.Event()
        self.release = threading.Event()
        real = migration_agent_sql.lock_nodes

        def lock_nodes(connection, node_ids):
            real(connection, node_ids)
            if threading.current_thread().name == HOLDER:
                self.locked.set()
                self.release.wait(_QUEUE_TIMEOUT)

        monkeypatch.setattr(migration_agent_sql, "lock_nodes", lock_nodes)

    def run(self, first: Callable[[], object],
            second: Callable[[], object]) -> list[object]:
        results: dict[str, object] = {}

        def call(name, function):
            results[name] = function()

        holder = threading.Thread(target=call, args=("first", first),
                                  name=HOLDER)
        holder.start()
        assert self.locked.wait(_QUEUE_TIMEOUT)
        other = threading.Thread(target=call, args=("second", second))
        other.start()
        queued = self._waiting()
        self.release.set()
        holder.join(_QUEUE_TIMEOUT)
        other.join(_QUEUE_TIMEOUT)
        assert queued, f"the second transaction never waited: {results}"
        return [results.get("first"), results.get("second")]

    def _waiting(self) -> bool:
        """Whether the second transaction queued behind the node locks
        (read from the server's lock tables, polled until it does)."""
        query = sa.text(_WAITING[self.engine.dialect.name.replace(
            "mariadb", "mysql")])
        deadline = time.monotonic() + _QUEUE_TIMEOUT
        while time.monotonic() < deadline:
            with self.engine.connect() as connection:
                if connection.execute(query).scalar():
                    return True
            time.sleep(0.05)
        return False


def _limits(conf: cfg.ConfigOpts) -> None:
    # Above two moves: the refusal comes from the row, not a limit.
    conf.set_override("max_outgoing_per_host", 5, group="migration")
    conf.set_override("max_incoming_per_host", 5, group="migration")


def test_two_takes_one_wins(agent_conf_on, monkeypatch):
    _limits(agent_conf_on)
    engine, h0, h1 = fleet(agent_conf_on)
    move = plan(engine, h0, h1)
    first = store_mod.AgentStore(agent_conf_on, "h0:1")
    second = store_mod.AgentStore(agent_conf_on, "h0:2")
    planned, = first.planned_from(h0)
    race = _Race(agent_conf_on, monkeypatch)
    assert race.run(lambda: first.take(planned),
                    lambda: second.take(planned)) == [
        None, "it is no longer planned"]
    assert (row(engine, move)["state"], row(engine, move)["agent"]) == (
        "running", "h0:1")


def test_a_cancel_after_a_take_flags_the_running_move(agent_conf_on,
                                                      monkeypatch):
    _limits(agent_conf_on)
    engine, h0, h1 = fleet(agent_conf_on)
    move = plan(engine, h0, h1)
    agent = store_mod.AgentStore(agent_conf_on, "h0:1")
    planned, = agent.planned_from(h0)
    operator = migrations_mod.MigrationStore(agent_conf_on)
    race = _Race(agent_conf_on, monkeypatch)
    assert race.run(lambda: agent.take(planned),
                    lambda: operator.cancel(move, "operator")) == [
        None, "running"]
    taken = row(engine, move)
    assert (taken["state"], taken["agent"], taken["cancel_requested"]) == (
        "running", "h0:1", True)
    assert claims(engine, move) == [h1] and claims(engine, INSTANCE) == [h0]


def test_an_owner_ending_a_move_a_reaper_steals_is_refused(agent_conf_on,
                                                           monkeypatch):
    engine, h0, h1 = fleet(agent_conf_on)
    move = plan(engine, h0, h1)
    owner = store_mod.AgentStore(agent_conf_on, "h0:1")
    assert owner.take(owner.planned_from(h0)[0]) is None
    reaper = store_mod.AgentStore(agent_conf_on, "h1:2")

    def steal_and_fail():
        with engine.connect() as connection:
            assert reaper.steal(migration_agent_sql.one(connection, move))
        return reaper.finish(move, "failed", "reaper")

    race = _Race(agent_conf_on, monkeypatch)
    # The owner read the move as its own and holds the node locks; the
    # reaper's steal commits meanwhile, its end waits for the locks.
    assert race.run(lambda: owner.finish(move, "completed", None),
                    steal_and_fail) == [False, True]
    assert row(engine, move)["state"] == "failed"
    assert claims(engine, INSTANCE) == [h0] and claims(engine, move) == []


def test_leases_use_the_servers_clock_and_reasons_fit(agent_conf_on):
    engine, h0, h1 = fleet(agent_conf_on)
    move = plan(engine, h0, h1)
    store = store_mod.AgentStore(agent_conf_on, "h0:1")
    store.take(store.planned_from(h0)[0])
    assert store.expired() == []
    lease = datetime.timedelta(seconds=agent_conf_on.migration_agent.lease)
    with engine.begin() as connection:
        now = migration_agent_sql.database_now(connection)
        assert now.tzinfo is None
        connection.execute(sa.update(models.Migration).where(
            models.Migration.uuid == move).values(
                heartbeat_at=now - lease - datetime.timedelta(seconds=1)))
    expired, = store.expired()
    assert expired.uuid == move
    # A libvirt error longer than the column: cut, not refused.
    assert store.finish(move, "failed", "libvirt: " + "x" * 400)
    assert len(row(engine, move)["reason"]) == 255
