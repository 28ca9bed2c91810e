"""The agent's side of the migrations table: a move taken once, the
per-host limits across agents, leases, the claims at the end."""

import datetime

import sqlalchemy as sa

from compute_monitor.migration import store as store_mod
from scheduler.db import models
from scheduler.placement import migrations as migrations_mod
from tests import fakes as scheduler_fakes
from tests.unit.compute_monitor.migration.fakes import INSTANCE
from tests.unit.compute_monitor.migration.fakes import MIGRATIONS
from tests.unit.compute_monitor.migration.fakes import claims
from tests.unit.compute_monitor.migration.fakes import fleet
from tests.unit.compute_monitor.migration.fakes import plan
from tests.unit.compute_monitor.migration.fakes import row


def test_a_move_is_taken_once(agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    first = store_mod.AgentStore(agent_config, "h0:1")
    second = store_mod.AgentStore(agent_config, "h0:2")
    planned, = first.planned_from(h0)
    assert first.take(planned) is None
    assert second.take(planned) == "it is no longer planned"
    taken = row(engine, move)
    assert (taken["state"], taken["agent"], taken["progress"]) == (
        "running", "h0:1", 0)


def test_max_incoming_holds_across_sources(agent_config):
    agent_config.set_override("max_incoming_per_host", 1, group="migration")
    engine, h0, h1 = fleet(agent_config)
    h2 = scheduler_fakes.add_node(engine, "h2")
    plan(engine, h0, h1)
    plan(engine, h2, h1, instance="other")
    store = store_mod.AgentStore(agent_config, "h0:1")
    assert store.take(store.planned_from(h0)[0]) is None
    refused = store.take(store.planned_from(h2)[0])
    assert refused == ("1 moves already enter h1 ([migration] "
                       "max_incoming_per_host)")


def test_max_outgoing_holds(agent_config):
    agent_config.set_override("max_outgoing_per_host", 1, group="migration")
    engine, h0, h1 = fleet(agent_config)
    h2 = scheduler_fakes.add_node(engine, "h2")
    plan(engine, h0, h1)
    plan(engine, h0, h2, instance="other", dest_host="h2")
    store = store_mod.AgentStore(agent_config, "h0:1")
    first, second = store.planned_from(h0)
    assert store.take(first) is None
    assert "max_outgoing_per_host" in store.take(second)


def test_completed_moves_the_claims(agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    store = store_mod.AgentStore(agent_config, "h0:1")
    store.take(store.planned_from(h0)[0])
    assert store.heartbeat(move, 42) == (True, False)
    assert row(engine, move)["progress"] == 42
    assert store.finish(move, "completed", None)
    assert claims(engine, INSTANCE) == [h1]
    assert claims(engine, move) == []
    assert row(engine, move)["progress"] == 100


def test_an_expired_lease_is_stolen_once_and_the_old_holder_is_out(
        agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    old = store_mod.AgentStore(agent_config, "h0:1")
    old.take(old.planned_from(h0)[0])
    assert old.expired() == []
    stale = models.utcnow() - datetime.timedelta(minutes=5)
    with engine.begin() as connection:
        connection.execute(MIGRATIONS.update().values(heartbeat_at=stale))
    reapers = [store_mod.AgentStore(agent_config, f"h1:{n}")
               for n in (1, 2)]
    expired, = reapers[0].expired()
    assert [reaper.steal(expired) for reaper in reapers] == [True, False]
    assert old.heartbeat(move, 50)[0] is False
    assert not old.finish(move, "completed", None)
    assert reapers[0].finish(move, "failed", "agent h0:1 lost its lease")
    assert claims(engine, INSTANCE) == [h0]
    assert claims(engine, move) == []


def test_a_planned_move_failed_releases_its_claim(agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    store = store_mod.AgentStore(agent_config, "h0:1")
    assert store.fail_planned(move, "destination node h1 is gone")
    assert (row(engine, move)["state"], claims(engine, move)) == (
        "failed", [])


def test_bandwidth_is_the_clusters_then_the_options(agent_config):
    engine, _, _ = fleet(agent_config)
    agent_config.set_override("bandwidth", 1000, group="migration")
    store = store_mod.AgentStore(agent_config, "h0:1")
    assert store.bandwidth_setting("c1") == 1000
    with engine.begin() as connection:
        connection.execute(sa.insert(models.ClusterSetting.__table__).values(
            cluster="c1", properties="{}", bandwidth_method="custom",
            bandwidth_custom=300, version=1, updated_at=models.utcnow()))
    assert store.bandwidth_setting("c1") == 300
    assert store.bandwidth_setting("c2") == 1000


def test_a_reason_is_cut_to_one_line_of_the_column(agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    store = store_mod.AgentStore(agent_config, "h0:1")
    store.take(store.planned_from(h0)[0])
    assert store.finish(move, "failed", "libvirt:\n  " + "x" * 400)
    assert row(engine, move)["reason"] == ("libvirt: " + "x" * 400)[:255]


def test_a_running_move_without_a_lease_is_expired(agent_config):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    # As MigrationStore.start leaves it: running, no heartbeat ever.
    assert migrations_mod.MigrationStore(agent_config).start(move)
    reaper = store_mod.AgentStore(agent_config, "h1:1")
    expired, = reaper.expired()
    assert expired.uuid == move and reaper.steal(expired)
    assert row(engine, move)["agent"] == "h1:1"


def test_leases_are_written_by_the_database_clock(agent_config,
                                                  monkeypatch):
    engine, h0, h1 = fleet(agent_config)
    move = plan(engine, h0, h1)
    # This host's clock an hour late: the lease is the database's time.
    late = models.utcnow() - datetime.timedelta(hours=1)
    monkeypatch.setattr(models, "utcnow", lambda: late)
    store = store_mod.AgentStore(agent_config, "h0:1")
    store.take(store.planned_from(h0)[0])
    assert row(engine, move)["heartbeat_at"] > late + datetime.timedelta(
        minutes=30)
    assert store.expired() == []
