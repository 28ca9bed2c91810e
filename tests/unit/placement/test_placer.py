"""scheduler.placement.Placer as the balance planner uses it: the same
placer as the manager's, with its cache update and rollback (the
manager's side is tested through SchedulerManager in
tests/unit/test_manager.py)."""

import logging

import pytest
from sqlalchemy import exc as sa_exc

from scheduler import claims
from scheduler import manager
from scheduler.placement import migrations as migrations_mod
from tests.unit.placement.fakes import claims_by_instance
from tests.unit.placement.fakes import planner
from tests.unit.placement.fakes import record_history
from tests.unit.placement.fakes import standard_fleet


@pytest.fixture
def conf(scheduler_config):
    scheduler_config.set_override("cpu_allocation_ratio", 1.0,
                                  group="filter_scheduler")
    scheduler_config.set_override("host_subset_size", 1,
                                  group="filter_scheduler")
    return scheduler_config


def lost_connection(*args, **kwargs):
    raise sa_exc.OperationalError("INSERT", {}, Exception(
        "server closed the connection unexpectedly"))


def test_manager_and_planner_share_one_placer(conf):
    mgr = manager.SchedulerManager(conf)
    assert mgr.planner.placer is mgr.placer
    assert mgr.planner.claims is mgr.claims
    assert mgr.placer.deferred_releases is mgr.deferred_releases
    assert mgr.placer.host_manager is mgr.host_manager


def test_planned_claim_reaches_the_cache_without_a_read(conf, engine):
    fleet = standard_fleet(engine, ticks=2)
    plan = planner(conf, fleet, "evenly_distributed")
    record_history(fleet, plan)
    planned, = plan.balance()
    cached = {host.host: host for host in plan.host_manager.host_states()}
    refresh = plan.host_manager.last_refresh
    assert refresh.allocations_read == 0
    assert planned.uuid in cached[planned.dest_host].instances


def test_claim_applied_but_unconfirmed_is_rolled_back(conf, engine,
                                                      monkeypatch, caplog):
    """The database applied the destination claim, then the connection
    dropped before it said so: the claim is released, no migration is
    recorded, and the failure is logged for the cluster."""
    fleet = standard_fleet(engine, ticks=2)
    plan = planner(conf, fleet, "evenly_distributed")
    record_history(fleet, plan)
    before = claims_by_instance(engine)
    real = claims.Claims.claim
    made = []

    def claim(self, *args, **kwargs):
        made.append(real(self, *args, **kwargs))
        lost_connection()

    monkeypatch.setattr(claims.Claims, "claim", claim)
    with caplog.at_level(logging.ERROR):
        assert plan.balance() == []
    assert len(made) == 1
    assert "server closed the connection" in caplog.text
    assert claims_by_instance(engine) == before
    assert migrations_mod.MigrationStore(conf).active() == []


def test_migration_row_refused_releases_the_claim(conf, engine,
                                                  monkeypatch):
    fleet = standard_fleet(engine, ticks=2)
    plan = planner(conf, fleet, "evenly_distributed")
    record_history(fleet, plan)
    before = claims_by_instance(engine)
    monkeypatch.setattr(migrations_mod.MigrationStore, "add",
                        lost_connection)
    assert plan.balance() == []
    assert claims_by_instance(engine) == before


def test_release_refused_is_retried_in_the_background(conf, engine,
                                                      monkeypatch):
    fleet = standard_fleet(engine, ticks=2)
    plan = planner(conf, fleet, "evenly_distributed")
    record_history(fleet, plan)
    before = claims_by_instance(engine)
    real_release = claims.Claims.release_allocation
    refused = []

    def release_allocation(self, *args, **kwargs):
        if not refused:
            refused.append(args)
            lost_connection()
        return real_release(self, *args, **kwargs)

    monkeypatch.setattr(migrations_mod.MigrationStore, "add",
                        lost_connection)
    monkeypatch.setattr(claims.Claims, "release_allocation",
                        release_allocation)
    plan.placer.deferred_releases.interval = 0.01
    assert plan.balance() == []
    assert len(refused) == 1
    assert plan.placer.deferred_releases.wait_until_done(10)
    assert claims_by_instance(engine) == before
