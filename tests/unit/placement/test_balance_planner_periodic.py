"""The balance planner: the periodic tick, migration policies and the
bandwidth a planned migration carries."""

import json
import logging

import pytest

from scheduler import exception
from scheduler.hosts.cache.manager import HostManager
from scheduler.placement import balance_planner as planner_mod
from scheduler.placement import migrations as migrations_mod
from scheduler.placement.balance_task import PeriodicBalancer
from tests.unit.placement.fakes import Fleet
from tests.unit.placement.fakes import planner
from tests.unit.placement.fakes import planner_conf
from tests.unit.placement.fakes import record_history
from tests.unit.placement.fakes import standard_fleet


@pytest.fixture
def conf(scheduler_config):
    return planner_conf(scheduler_config)


def test_periodic_tick_survives_a_failing_planner(conf, caplog):
    class Broken:
        def balance(self, spacing):
            raise RuntimeError("database away\nsecond line")

    task = PeriodicBalancer(conf, Broken())
    assert task.tick() == []
    record, = caplog.records
    assert record.getMessage() == ("Balancing tick failed: RuntimeError: "
                                   "database away second line")


def test_periodic_balancing_off_with_interval_zero(conf):
    conf.set_override("interval", 0, group="balancer")
    task = PeriodicBalancer(conf, planner_mod.BalancePlanner(conf))
    assert task.start() is False
    task.stop()


def test_periodic_tick_reports_what_it_planned(conf, engine):
    fleet = standard_fleet(engine, ticks=4)
    plan = planner(conf, fleet, "evenly_distributed")
    record_history(fleet, plan)
    conf.set_override("interval", 60, group="balancer")
    planned, = PeriodicBalancer(conf, plan).tick()
    assert planned["state"] == "planned"
    assert planned["cluster"] in ("c1", "c2")


def test_requested_migration_policy_overrides_the_clusters(conf, engine):
    fleet = standard_fleet(engine, ticks=2)
    plan = planner(conf, fleet, "evenly_distributed")
    with pytest.raises(exception.InvalidRequest, match="nope"):
        plan.balance(migration_policy="nope")
    record_history(fleet, plan)
    dry, = plan.balance(dry_run=True)
    assert dry.migration_policy == "minimal_downtime"
    real, = plan.balance(migration_policy="post_copy")
    assert real.migration_policy == "post_copy"


def test_unusable_migration_policy_stops_only_its_cluster(
        conf, engine, tmp_path, caplog):
    fleet = Fleet(engine, ticks=2)
    for cluster in ("c1", "c2"):
        fleet.add_host(f"{cluster}-busy", 7, cluster=cluster)
        fleet.add_host(f"{cluster}-idle", 1, cluster=cluster)
    # Edited after start-up: a stalling limit below zero is rejected, so
    # c1's policy is unusable until the file is fixed.
    bad = {"id": "careful", "name": "Careful", "description": "",
           "maxMigrations": 1, "autoConvergence": False,
           "migrationCompression": False, "enableGuestEvents": False,
           "config": {"initialItems": [], "lastItems": [],
                      "convergenceItems": [{
                          "stallingLimit": -1, "convergenceItem": {
                              "action": "setDowntime", "params": ["100"]}}]}}
    policies_file = tmp_path / "policies.json"
    policies_file.write_text(json.dumps([bad]))
    conf.set_override("policies_file", str(policies_file), group="migration")
    conf.set_override("cluster_policies", {"c1": "careful"},
                      group="migration")
    plan = planner(conf, fleet, "evenly_distributed")
    for fleet.minute in range(3):
        fleet.report()
        with caplog.at_level(logging.ERROR):
            planned = plan.balance()
    assert [m.cluster for m in planned] == ["c2"]
    assert any("cluster c1" in r.getMessage() and "careful" in r.getMessage()
               for r in caplog.records if r.levelno == logging.ERROR)


def test_migration_policy_max_migrations_caps_the_host_limits(conf, engine):
    fleet = standard_fleet(engine, ticks=2)
    # [migration] limits of 2 each way; the policy allows one at a time.
    plan = planner(conf, fleet, "evenly_distributed", max_incoming=2,
                   max_outgoing=2)
    for fleet.minute in range(3):
        fleet.report()
        planned = plan.balance(migration_policy="suspend_workload_if_needed")
    migration_, = planned
    hosts = HostManager(conf).host_states()
    active = migrations_mod.MigrationStore(conf).active()

    def can_migrate(max_migrations):
        loads = {load.state.host: load
                 for load in plan._loads(hosts, active, max_migrations)}
        return (loads[migration_.source_host].can_migrate,
                loads[migration_.dest_host].can_migrate)

    assert can_migrate(None) == (True, True)
    assert can_migrate(1) == (False, False)
    # The next tick under that policy finds h0 busy with its migration.
    fleet.minute = 2
    later = plan.balance(migration_policy="suspend_workload_if_needed")
    assert all(m.source_host != migration_.source_host for m in later)


def test_planned_migration_carries_its_bandwidth(conf, engine):
    fleet = standard_fleet(engine, ticks=2)
    plan = planner(conf, fleet, "evenly_distributed")
    record_history(fleet, plan)
    # auto without a known link speed: the hypervisor decides.
    assert plan.balance(dry_run=True)[0].bandwidth_mbps is None
    conf.set_override("bandwidth", 1000, group="migration")
    # 1000 Mbps shared by minimal_downtime's two concurrent migrations.
    planned, = plan.balance()
    assert planned.as_dict()["bandwidth_mbps"] == 500
    stored, = migrations_mod.MigrationStore(conf).active()
    assert stored.uuid == planned.uuid and stored.bandwidth_mbps is None
