"""The planner with the steady_load policy: one migration per cluster and
tick, destinations kept under HighUtilization - SafetyMargin, instances
that just arrived left alone."""

import dataclasses
import datetime

import sqlalchemy as sa

from scheduler.db import models
from scheduler.placement import balance_planner as planner_mod
from scheduler.placement import migrations as migrations_mod
from scheduler.policies import cluster as cluster_policy
from tests.unit.placement import test_balance_planner
from tests.unit.placement.fakes import ALLOCATIONS
from tests.unit.placement.fakes import HIGH
from tests.unit.placement.fakes import Fleet
from tests.unit.placement.fakes import standard_fleet

#: The planner tests' configuration fixture.
conf = test_balance_planner.conf

#: HighUtilization 80 minus the default SafetyMargin 10.
SAFE = 70.0


def steady_planner(conf, fleet: Fleet, **params: int
                   ) -> planner_mod.BalancePlanner:
    """A planner balancing cluster c1 with the built-in steady_load,
    ``params`` over its parameters (a window of a few minutes: the fleet
    reports once a simulated minute)."""
    conf.set_override("cluster_policies", {"c1": "steady_load"},
                      group="scheduler")
    builtin = cluster_policy.load_policies(conf).policies["steady_load"]
    policy = dataclasses.replace(builtin, balancer_parameters={
        **builtin.balancer_parameters, "LoadWindowMinutes": 3, **params})
    return planner_mod.BalancePlanner(
        conf, policies=cluster_policy.PolicySet(
            {policy.name: policy}, {"c1": policy.name}, None),
        clock=fleet.now, max_incoming=1, max_outgoing=1)


def age_claims(engine, hours: float) -> None:
    """Every claim made ``hours`` ago: the instances are long settled."""
    with engine.begin() as connection:
        connection.execute(ALLOCATIONS.update().values(
            created_at=models.utcnow() - datetime.timedelta(hours=hours)))


def tick_until_done(fleet: Fleet, plan: planner_mod.BalancePlanner
                    ) -> list[list]:
    """The migrations planned at each tick; each lands at the next."""
    store = migrations_mod.MigrationStore(plan.conf)
    ticks = []
    while fleet.minute <= fleet.ticks:
        fleet.land(store)
        fleet.report()
        planned = plan.balance()
        for migration in planned:
            # Never a destination the move makes hot: its real load with
            # everything landing there stays under the margin.
            landing = sum(fleet.placement[m.instance_uuid][2]
                          for m in store.active()
                          if m.dest_host == migration.dest_host)
            assert fleet.cpu(migration.dest_host) + landing < SAFE
        fleet.start(planned, 1)
        ticks.append(planned)
        fleet.minute += 1
    return ticks


def test_one_migration_per_tick_until_no_host_stays_hot(conf, engine):
    fleet = standard_fleet(engine, ticks=14)
    age_claims(engine, hours=3)
    ticks = tick_until_done(fleet, steady_planner(conf, fleet))

    assert max(len(planned) for planned in ticks) == 1
    moved = [m for planned in ticks for m in planned]
    # h0 (92.5) needs two moves, h1 (80) one; nothing else moves, and
    # nothing before the window (3 minutes) is covered.
    assert sorted(m.source_host for m in moved) == ["h0", "h0", "h1"]
    assert not any(ticks[:3])
    assert max(fleet.cpu(host) for host in fleet.nodes) < HIGH
    assert len({m.instance_uuid for m in moved}) == len(moved)


def test_instances_that_just_arrived_stay(conf, engine):
    # The claims were made now: every instance is within the cooldown.
    fleet = standard_fleet(engine, ticks=6)
    ticks = tick_until_done(fleet, steady_planner(conf, fleet))
    assert not any(ticks)
    with engine.connect() as connection:
        assert connection.execute(sa.select(sa.func.count()).select_from(
            test_balance_planner.MIGRATIONS)).scalar() == 0

    fleet.minute, fleet.ticks = 0, 6
    ticks = tick_until_done(
        fleet, steady_planner(conf, fleet, MoveCooldownMinutes=0))
    assert any(ticks)
