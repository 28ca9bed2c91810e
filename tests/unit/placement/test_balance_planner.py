"""The balance planner on a simulated cluster in SQLite.

A ``Fleet`` plays the compute nodes and the hypervisor: it knows where
each instance really runs and how busy it keeps its host, writes each
node's cpu.percent report once a simulated minute, and carries out the
migrations the planner plans (completing them a given number of ticks
later, which moves the instance's claim to the destination).

Simulated time runs in the past, one minute a tick, ending now: the
reports carry simulated timestamps (what the history and the planner's
clock see), while the rows' heartbeat and ``metrics_updated_at`` are the
real time of the report, which is what heartbeats and pending claims are
compared with.
"""

import dataclasses
import datetime
import json
import logging

import pytest
import sqlalchemy as sa

from scheduler.balancer import history as history_mod
from scheduler.db import models
from scheduler.hosts.cache.build import ReportedHost
from scheduler.hosts.cache.manager import HostManager
from scheduler.placement import balance_planner as planner_mod
from scheduler.placement import migrations as migrations_mod
from scheduler.policies import cluster as cluster_policy
from tests.unit.placement.fakes import HIGH
from tests.unit.placement.fakes import Fleet
from tests.unit.placement.fakes import claims_by_instance
from tests.unit.placement.fakes import planner
from tests.unit.placement.fakes import planner_conf
from tests.unit.placement.fakes import record_history
from tests.unit.placement.fakes import standard_fleet


@pytest.fixture
def conf(scheduler_config):
    return planner_conf(scheduler_config)

MIGRATIONS = models.Migration.__table__
SAMPLES = models.UtilizationSample.__table__

LOW = 20.0


def run(fleet: Fleet, plan: planner_mod.BalancePlanner, duration: int,
        limit: int) -> list:
    """Tick until the simulated time is over; checks at every tick that
    no host exceeds ``limit`` migrations in either direction and that no
    migration goes where it would push the host to HIGH."""
    store = migrations_mod.MigrationStore(plan.conf)
    everything = []
    while fleet.minute <= fleet.ticks:
        fleet.land(store)
        fleet.report()
        planned = plan.balance()
        active = store.active()
        for migration_ in planned:
            incoming = [m for m in active
                        if m.dest_host == migration_.dest_host]
            # The destination's real load once all its incoming
            # migrations have landed.
            landing = sum(fleet.placement[m.instance_uuid][2]
                          for m in incoming)
            assert fleet.cpu(migration_.dest_host) + landing < HIGH
        for host in fleet.nodes:
            assert sum(m.source_host == host for m in active) <= limit
            assert sum(m.dest_host == host for m in active) <= limit
        assert len(planned) <= len({m.cluster for m in planned})
        fleet.start(planned, duration)
        everything.extend(planned)
        fleet.minute += 1
    return everything


def test_even_distribution_relieves_the_overloaded_hosts(conf, engine):
    fleet = standard_fleet(engine, ticks=12)
    before = {host: fleet.cpu(host) for host in fleet.nodes}
    assert [h for h, cpu in before.items() if cpu >= HIGH] == ["h0", "h1"]
    plan = planner(conf, fleet, "evenly_distributed", max_incoming=1,
                   max_outgoing=1)
    planned = run(fleet, plan, duration=2, limit=1)

    after = {host: fleet.cpu(host) for host in fleet.nodes}
    assert max(after.values()) < HIGH, after
    # h0 needs two moves (92.5 -> 80 is still HIGH), h1 one; nothing else
    # moves, and the first plan waits for two minutes of history.
    assert sorted(m.source_host for m in planned) == ["h0", "h0", "h1"]
    # Each instance holds exactly one claim, where it runs now.
    assert claims_by_instance(engine) == {
        instance: host for instance, (host, _, _) in fleet.placement.items()}
    with engine.connect() as connection:
        states = connection.execute(sa.select(MIGRATIONS.c.state)).all()
    assert {state for state, in states} == {"completed"}


def test_nothing_is_planned_before_the_duration(conf, engine):
    fleet = standard_fleet(engine, ticks=1)
    plan = planner(conf, fleet, "evenly_distributed")
    fleet.report()
    assert plan.balance() == []
    fleet.minute = 1
    fleet.report()
    # One minute of history only; CpuOverCommitDurationMinutes is 2.
    assert plan.balance() == []


def test_power_saving_empties_the_underutilised_hosts(conf, engine):
    fleet = standard_fleet(engine, ticks=16)
    idle = [h for h in fleet.nodes if fleet.count(h)
            and fleet.cpu(h) < LOW]
    assert idle == ["h2", "h3"]
    plan = planner(conf, fleet, "power_saving", max_incoming=1,
                   max_outgoing=1)
    planned = run(fleet, plan, duration=1, limit=1)

    assert [fleet.count(h) for h in idle] == [0, 0]
    assert max(fleet.cpu(h) for h in fleet.nodes) < HIGH
    # Nothing was moved onto an idle host.
    assert not {m.dest_host for m in planned} & {*idle, "h9"}


def test_even_vm_count_evens_the_counts(conf, engine):
    fleet = Fleet(engine, ticks=12)
    for host, instances in (("a", 14), ("b", 12), ("c", 3), ("d", 4),
                            ("e", 6)):
        fleet.add_host(host, instances, vcpus=1, busy=0.1)
    plan = planner(conf, fleet, "vm_evenly_distributed", max_incoming=2,
                   max_outgoing=2)
    run(fleet, plan, duration=1, limit=2)
    counts = sorted(fleet.count(h) for h in fleet.nodes)
    # HighVmCount 10, MigrationThreshold 5.
    assert counts[-1] <= 10 or counts[-1] - counts[0] < 5, counts
    assert sum(counts) == 39


def test_dry_run_plans_the_same_without_claim_or_row(conf, engine):
    fleet = standard_fleet(engine, ticks=2)
    plan = planner(conf, fleet, "evenly_distributed")
    record_history(fleet, plan)
    claims = claims_by_instance(engine)
    dry, = plan.balance(dry_run=True)
    assert dry.allocation_id is None
    assert claims_by_instance(engine) == claims
    assert migrations_mod.MigrationStore(conf).active() == []

    seen = []
    plan.on_planned = seen.append
    real, = plan.balance()
    assert (real.instance_uuid, real.source_host, real.dest_host) == (
        dry.instance_uuid, dry.source_host, dry.dest_host)
    assert claims_by_instance(engine)[real.uuid] == real.dest_host
    assert seen == [json.loads(json.dumps(real.as_dict()))]
    assert seen[0]["state"] == "planned"
    assert seen[0]["migration_policy"] == "minimal_downtime"


def test_one_cluster_failing_does_not_stop_the_others(conf, engine,
                                                      caplog):
    fleet = Fleet(engine, ticks=2)
    for cluster in ("c1", "c2"):
        fleet.add_host(f"{cluster}-busy", 7, cluster=cluster)
        fleet.add_host(f"{cluster}-idle", 1, cluster=cluster)
    conf.set_override("cluster_policies", {"c1": "evenly_distributed"},
                      group="scheduler")
    good = cluster_policy.load_policies(conf).policies["evenly_distributed"]
    # Parameters the balancer cannot run with: it raises KeyError.
    broken = dataclasses.replace(good, name="broken", balancer_parameters={})
    policies = cluster_policy.PolicySet(
        {"broken": broken, good.name: good},
        {"c1": "broken", "c2": good.name}, None)
    plan = planner_mod.BalancePlanner(conf, policies=policies,
                                      clock=fleet.now)
    for fleet.minute in range(3):
        fleet.report()
        with caplog.at_level(logging.ERROR):
            planned = plan.balance()
    assert [m.cluster for m in planned] == ["c2"]
    errors = [r.getMessage() for r in caplog.records
              if r.levelno == logging.ERROR]
    assert errors and all("cluster c1 (policy broken)" in e and "KeyError"
                          in e for e in errors)


def test_history_is_shared_and_pruned(conf, engine):
    fleet = standard_fleet(engine, ticks=6)
    first = planner(conf, fleet, "evenly_distributed")
    second = planner(conf, fleet, "evenly_distributed")
    for fleet.minute in range(7):
        fleet.report()
        first.samples.record(first.host_manager.host_states(), 2)
        # The same reports again: nothing new to record.
        second.samples.record(second.host_manager.host_states(), 2)
    with engine.connect() as connection:
        rows = connection.execute(sa.select(
            SAMPLES.c.node_id, SAMPLES.c.reported_at,
            SAMPLES.c.cpu_percent, SAMPLES.c.instances)).all()
    h0 = [row for row in rows if row.node_id == fleet.nodes["h0"]]
    # Minutes 4, 5 and 6: the two-minute window and its opening report.
    assert len(h0) == 3 and len(rows) == 30
    assert {row.cpu_percent for row in h0} == {92.5}
    assert {row.instances for row in h0} == {7}


@pytest.mark.parametrize("policy, recorded", [
    ("evenly_distributed", 10), ("none", 0)])
def test_history_is_recorded_while_a_balancer_is_in_force(
        conf, engine, policy, recorded):
    fleet = standard_fleet(engine, ticks=1)
    fleet.report()
    planner(conf, fleet, policy).balance(dry_run=True)
    with engine.connect() as connection:
        rows = connection.execute(sa.select(sa.func.count()).select_from(
            SAMPLES)).scalar()
    assert rows == recorded


def test_a_tick_without_a_balancing_policy_builds_no_host_state(conf,
                                                                engine):
    fleet = standard_fleet(engine, ticks=1)
    fleet.report()
    balancer = planner(conf, fleet, "none")
    balancer.host_manager.host_states()
    fleet.report()
    assert balancer.balance() == []
    states = [entry.state for entry
              in balancer.host_manager._entries.values()]
    # The reports were read; no host's state was built for the tick.
    assert states and all(type(state) is ReportedHost
                          and state._state is None for state in states)


def test_history_reads_the_samples_other_processes_added(conf, engine):
    fleet = standard_fleet(engine, ticks=3)
    first = planner(conf, fleet, "evenly_distributed")
    second = planner(conf, fleet, "evenly_distributed")
    h0 = fleet.nodes["h0"]
    fleet.report()
    first.samples.record(first.host_manager.host_states(), 10)
    fleet.minute = 1
    fleet.report()
    # Only the second process saw minute 1's report.
    second.samples.record(second.host_manager.host_states(), 10)
    fleet.minute = 2
    fleet.report()
    history = first.samples.record(first.host_manager.host_states(), 10)
    stamps = [sample.reported_at for sample in history.samples(h0)]
    assert len(stamps) == 3 and stamps == sorted(stamps)
    assert stamps[2] - stamps[0] > datetime.timedelta(seconds=110)
    with engine.connect() as connection:
        assert connection.execute(sa.select(sa.func.count()).select_from(
            SAMPLES)).scalar() == 30


def test_history_committed_late_is_read_by_the_next_full_read(
        conf, engine, monkeypatch):
    monkeypatch.setattr(history_mod.SampleStore, "FULL_READ_TICKS", 3)
    fleet = standard_fleet(engine, ticks=3)
    plan = planner(conf, fleet, "evenly_distributed")
    h9 = fleet.nodes["h9"]
    fleet.report()
    first = plan.samples.record(plan.host_manager.host_states(), 10)
    # A row under an id below those read: committed late by another
    # process.
    late = fleet.now() - datetime.timedelta(seconds=30)
    with engine.begin() as connection:
        connection.execute(SAMPLES.insert().values(
            id=-1, node_id=h9, reported_at=late, cpu_percent=1.0,
            instances=0))
    second = plan.samples.record(plan.host_manager.host_states(), 10)
    third = plan.samples.record(plan.host_manager.host_states(), 10)
    assert len(first.samples(h9)) == len(second.samples(h9)) == 1
    assert [s.reported_at for s in third.samples(h9)][0] == late


def test_stale_cpu_is_neither_over_nor_under(conf, engine):
    fleet = standard_fleet(engine, ticks=20)
    plan = planner(conf, fleet, "evenly_distributed")
    record_history(fleet, plan)
    # Ten minutes later nobody reported: every cpu.percent is stale
    # ([metrics] max_age 300 s), whatever the history says.
    fleet.minute = 13
    assert plan.balance(dry_run=True) == []


def test_failed_migration_releases_the_destination_claim(conf, engine):
    fleet = standard_fleet(engine, ticks=2)
    plan = planner(conf, fleet, "evenly_distributed")
    for fleet.minute in range(3):
        fleet.report()
        planned = plan.balance()
    migration_, = planned
    store = migrations_mod.MigrationStore(conf)
    assert store.start(migration_.uuid)
    assert [m.state for m in store.active()] == ["running"]
    assert store.finish(migration_.uuid, migrations_mod.FAILED)
    assert not store.finish(migration_.uuid, migrations_mod.CANCELLED)
    claims = claims_by_instance(engine)
    assert migration_.uuid not in claims
    assert claims[migration_.instance_uuid] == migration_.source_host


def test_host_loads_count_migrations_under_way(conf, engine):
    fleet = standard_fleet(engine, ticks=2)
    plan = planner(conf, fleet, "evenly_distributed", max_incoming=1,
                   max_outgoing=1)
    for fleet.minute in range(3):
        fleet.report()
        planned = plan.balance()
    migration_, = planned
    hosts = HostManager(conf).host_states()
    loads = {load.state.host: load for load in plan._loads(
        hosts, migrations_mod.MigrationStore(conf).active())}
    source, dest = loads[migration_.source_host], loads[migration_.dest_host]
    assert source.cpu_percent == fleet.cpu(source.state.host) - 12.5
    # The destination claim is newer than the last report: pending.
    assert dest.cpu_percent == fleet.cpu(dest.state.host) + 12.5
    assert not source.can_migrate and not dest.can_migrate
    assert migration_.instance_uuid not in {
        i.uuid for i in source.instances}
    assert migration_.uuid not in {i.uuid for i in dest.instances}
    assert dest.instance_count == fleet.count(dest.state.host) + 1
    assert source.instance_count == fleet.count(source.state.host) - 1


def test_history_samples_follow_the_metric_timestamp():
    samples = [history_mod.Sample(datetime.datetime(2026, 1, 1, 0, m), 90,
                                  1) for m in (0, 1, 2)]
    assert history_mod.window_start(samples, 2) == 0
    assert history_mod.window_start(samples, 1.5) == 0
    assert history_mod.window_start(samples, 1) == 1
    assert history_mod.window_start(samples, 3) is None
    assert history_mod.window_start([], 1) is None


def test_spacing_keeps_one_migration_per_cluster_and_interval(conf,
                                                              engine):
    fleet = standard_fleet(engine, ticks=4)
    plan = planner(conf, fleet, "evenly_distributed")
    record_history(fleet, plan)
    first, = plan.balance(spacing=300)
    # Another worker's tick a moment later: the cluster had its share.
    assert plan.balance(spacing=300) == []
    second, = plan.balance()
    assert second.uuid != first.uuid
