"""The agent's cycle on a fake hypervisor: a move carried out, and the
moves that cannot be (instance gone, destination gone, libvirt
unreachable) each ending failed with its reason and a log line."""

import datetime
import logging

from sqlalchemy import exc as sa_exc

from compute_monitor.migration import agent as agent_mod
from compute_monitor.migration import mover as mover_mod
from compute_monitor.migration import store as store_mod
from scheduler.db import migration_agent_sql
from scheduler.db import models
from tests.fakes import NODES
from tests.unit.compute_monitor.migration.fakes import INSTANCE
from tests.unit.compute_monitor.migration.fakes import MIGRATIONS
from tests.unit.compute_monitor.migration.fakes import Connection
from tests.unit.compute_monitor.migration.fakes import Domain
from tests.unit.compute_monitor.migration.fakes import LibvirtError
from tests.unit.compute_monitor.migration.fakes import claims
from tests.unit.compute_monitor.migration.fakes import fleet
from tests.unit.compute_monitor.migration.fakes import iteration
from tests.unit.compute_monitor.migration.fakes import libvirt_module
from tests.unit.compute_monitor.migration.fakes import plan
from tests.unit.compute_monitor.migration.fakes import row

SOURCE_URI = "fake://h0/system"
DEST_URI = "fake://h1/system"


def cycle(conf, connections) -> agent_mod.MigrationAgent:
    agent = agent_mod.MigrationAgent(conf, libvirt_module(connections))
    agent.cycle()
    for thread in agent._threads.values():
        thread.join(10)
    return agent


def test_a_planned_move_is_carried_out(agent_config, caplog):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    domain = Domain([iteration(1), iteration(2)])
    with caplog.at_level(logging.INFO):
        cycle(agent_config, {SOURCE_URI: Connection({INSTANCE: domain})})
    assert row(engine, move)["state"] == "completed"
    assert claims(engine, INSTANCE) == [h1]
    migrate, = (call for call in domain.calls if call[0] == "migrate")
    assert migrate[1] == DEST_URI
    assert (f"Migration {move} of instance {INSTANCE} from h0 to h1 "
            "completed") in caplog.text


def test_an_instance_gone_fails_the_move(agent_config, caplog):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    cycle(agent_config, {SOURCE_URI: Connection({})})
    ended = row(engine, move)
    assert (ended["state"], ended["reason"]) == (
        "failed", f"instance {INSTANCE} is not on h0 ({SOURCE_URI})")
    assert claims(engine, INSTANCE) == [h0] and claims(engine, move) == []
    assert f"Migration {move} of instance {INSTANCE} from h0 to h1 " \
           "failed: instance" in caplog.text


def test_an_unreachable_libvirt_fails_the_move(agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    cycle(agent_config, {})
    ended = row(engine, move)
    assert ended["state"] == "failed"
    assert ended["reason"].startswith(f"libvirt at {SOURCE_URI} "
                                      "unreachable: Failed to connect")


def test_a_gone_destination_fails_the_planned_move(agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    with engine.begin() as connection:
        connection.execute(NODES.delete().where(NODES.c.id == h1))
    domain = Domain()
    cycle(agent_config, {SOURCE_URI: Connection({INSTANCE: domain})})
    ended = row(engine, move)
    assert (ended["state"], ended["reason"]) == (
        "failed", "destination node h1 is gone")
    assert domain.calls == [] and claims(engine, INSTANCE) == [h0]


def _expire(conf, engine, h0, h1) -> str:
    """A move its agent (h0:99) took, then stopped renewing."""
    move = plan(engine, h0, h1)
    dead = store_mod.AgentStore(conf, "h0:99")
    dead.take(dead.planned_from(h0)[0])
    stale = models.utcnow() - datetime.timedelta(minutes=5)
    with engine.begin() as connection:
        connection.execute(MIGRATIONS.update().values(heartbeat_at=stale))
    return move


def test_a_dead_agents_move_that_landed_is_completed(agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = _expire(agent_config, engine, h0, h1)
    cycle(agent_config, {DEST_URI: Connection({INSTANCE: Domain()})})
    ended = row(engine, move)
    assert (ended["state"], ended["reason"]) == (
        "completed", "agent h0:99 lost its lease; the instance runs on the "
        "destination")
    assert claims(engine, INSTANCE) == [h1]


def test_a_dead_agents_unsteered_job_is_aborted_and_fails(agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = _expire(agent_config, engine, h0, h1)
    source = Domain(job=2)
    # On the destination, paused: the incoming side of the move.
    cycle(agent_config, {SOURCE_URI: Connection({INSTANCE: source}),
                         DEST_URI: Connection({INSTANCE: Domain(state=3)})})
    ended = row(engine, move)
    assert (ended["state"], ended["reason"]) == (
        "failed", "agent h0:99 lost its lease; the instance is still on "
        "the source")
    assert ("abortJob",) in source.calls
    assert claims(engine, INSTANCE) == [h0] and claims(engine, move) == []


def test_a_dead_agents_move_found_nowhere_fails_saying_so(agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = _expire(agent_config, engine, h0, h1)
    cycle(agent_config, {})
    assert row(engine, move)["reason"] == (
        "agent h0:99 lost its lease; the instance was found running on "
        "neither node")


class _FlakyStore(store_mod.AgentStore):
    """The database answers a move's end only at the second try."""

    failures = 1

    def finish(self, migration_uuid, state, reason):
        if self.failures:
            self.failures -= 1
            raise sa_exc.OperationalError("UPDATE", {}, Exception("gone"))
        return super().finish(migration_uuid, state, reason)


def test_an_outcome_is_recorded_once_the_database_answers(agent_config,
                                                          caplog):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    domain = Domain([iteration(1)])
    agent = agent_mod.MigrationAgent(
        agent_config, libvirt_module({SOURCE_URI: Connection(
            {INSTANCE: domain})}), _FlakyStore(agent_config, "h0:1"))
    agent.cycle()
    for thread in agent._threads.values():
        thread.join(10)
    assert row(engine, move)["state"] == "completed"
    assert f"Migration {move} ended completed but cannot be recorded, " \
           "retrying" in caplog.text


class _VanishingDomain(Domain):
    def state(self):
        raise LibvirtError("Domain not found: no domain with matching uuid")


def test_a_libvirt_error_while_reaping_fails_the_move_saying_so(
        agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = _expire(agent_config, engine, h0, h1)
    cycle(agent_config, {DEST_URI: Connection(
        {INSTANCE: _VanishingDomain()})})
    assert row(engine, move)["reason"] == (
        "agent h0:99 lost its lease; asking libvirt where the instance "
        "runs failed: Domain not found: no domain with matching uuid")


def test_a_move_this_agent_holds_without_a_thread_is_reaped(agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    # Taken under this agent's name (host:pid), its thread gone.
    held = store_mod.AgentStore(agent_config,
                                agent_mod.agent_name(agent_config))
    held.take(held.planned_from(h0)[0])
    stale = models.utcnow() - datetime.timedelta(minutes=5)
    with engine.begin() as connection:
        connection.execute(MIGRATIONS.update().values(heartbeat_at=stale))
    cycle(agent_config, {DEST_URI: Connection({INSTANCE: Domain()})})
    assert row(engine, move)["state"] == "completed"
    assert claims(engine, INSTANCE) == [h1]


def test_a_move_landing_after_a_reaper_failed_it_is_corrected(
        agent_config, caplog):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    agent = agent_mod.MigrationAgent(agent_config, libvirt_module({}))
    taken, = agent.store.planned_from(h0)
    agent.store.take(taken)
    # A reaper judged it before the guest landed: failed.
    reaper = store_mod.AgentStore(agent_config, "h1:2")
    with engine.connect() as connection:
        assert reaper.steal(migration_agent_sql.one(connection, move))
    assert reaper.finish(move, "failed", "the instance is still on the "
                         "source")
    agent._record(taken, mover_mod.Outcome(mover_mod.COMPLETED))
    assert row(engine, move)["state"] == "completed"
    assert claims(engine, INSTANCE) == [h1]
    assert (f"Migration {move} completed after this agent lost its lease, "
            "and was recorded otherwise: now recorded completed") \
        in caplog.text


def test_a_move_gets_the_policys_share_of_the_bandwidth(agent_config):
    engine, h0, h1 = fleet(agent_config)
    plan(engine, h0, h1)
    agent_config.set_override("bandwidth", 1000, group="migration")
    domain = Domain([iteration(1)])
    cycle(agent_config, {SOURCE_URI: Connection({INSTANCE: domain})})
    migrate, = (call for call in domain.calls if call[0] == "migrate")
    # minimal_downtime runs 2 moves at once (maxMigrations): 500 Mbps each.
    assert migrate[2]["bandwidth"] == int(500 * 1_000_000 / 8 / 2**20)


class _CountingStore(store_mod.AgentStore):
    takes = 0

    def take(self, row):
        self.takes += 1
        return super().take(row)


def test_a_full_source_stops_the_cycles_takes(agent_config):
    engine, h0, h1 = fleet(agent_config)
    agent_config.set_override("max_outgoing_per_host", 1, group="migration")
    for _ in range(3):
        plan(engine, h0, h1)
    other = store_mod.AgentStore(agent_config, "h0:99")
    assert other.take(other.planned_from(h0)[0]) is None
    store = _CountingStore(agent_config, "h0:1")
    agent = agent_mod.MigrationAgent(agent_config, libvirt_module({}), store)
    agent.cycle()
    assert store.takes == 1 and agent._threads == {}
