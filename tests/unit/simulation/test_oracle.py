"""The oracle: scores by future hot slots, then overload, then mean
load; placed through the real engine with its own weigher."""

import numpy as np

from scheduler.simulation import fleet
from scheduler.simulation import oracle
from scheduler.simulation import runner
from scheduler.simulation import trace


def test_scores_prefer_fewer_new_hot_slots_then_less_overload():
    future = oracle.FutureDemand(np.array([4.0, 4.0, 4.0]), 4, 80.0)
    future.add(0, np.array([3.0, 3.0]), 0)      # hot once 1 more core
    future.add(1, np.array([2.0, 2.0]), 0)
    future.add(2, np.array([0.0, 0.0, 4.0]), 1)
    scores = future.scores(np.array([1.5, 1.5]), 0)
    # Host 1: 3.5 >= 3.2 hot in two slots; host 0 too (4.5) and
    # overloaded; host 2: 1.5 then 1.5 (slot 1: 0 + 1.5): none hot.
    assert np.argmax(scores) == 2
    assert scores[1] > scores[0]
    future.remove(2, np.array([0.0, 0.0, 4.0]), 1, 3)
    np.testing.assert_array_equal(future.demand[2], [0, 0, 0, 0])


def test_mean_breaks_ties():
    future = oracle.FutureDemand(np.array([8.0, 8.0]), 2, 80.0)
    future.add(0, np.array([1.0, 1.0]), 0)
    scores = future.scores(np.array([1.0, 1.0]), 0)
    assert scores[1] > scores[0]


def _workload(vms: int) -> trace.Workload:
    arrays = {name: np.full(vms, value, dtype=float) for name, value in (
        ("maxcpu", 100), ("avgcpu", 50), ("p95maxcpu", 100))}
    return trace.Workload(
        created=np.arange(vms) * 100.0, deleted=np.full(vms, 7200.0),
        cores=np.full(vms, 4, dtype=np.int64),
        memory_mb=np.full(vms, 1024, dtype=np.int64),
        interactive=np.zeros(vms, dtype=bool), **arrays)


def test_oracle_run_keeps_future_busy_vms_apart(unit_ratio_config):
    # Two 8-core nodes; VMs 0 and 1 idle at arrival, both 100 % busy
    # from slot 2; VMs 2 and 3 always idle. Stacking 0 and 1 makes a node
    # hot for the rest of the hour; the oracle never does.
    matrix = np.zeros((4, 14), dtype=np.float32)
    matrix[:2, 2:] = 100.0
    settings = runner.Settings(fleet=fleet.FleetSpec(2, 8, 16384), seed=0,
                               report_interval=60.0, duration=3600.0)
    simulation = oracle.OracleSimulation(unit_ratio_config, _workload(4),
                                         settings, matrix)
    result = simulation.run()
    assert result["placed"] == 4 and result["migrations"] == 0
    host_of = simulation.host_of
    assert host_of[0] != host_of[1]
    assert result["hot_host_minutes"] == 0.0
    # Busy nodes at 4 of 8 cores from slot 2 on (10 slots, 50 samples).
    assert result["p95_host_cpu"] == 50.0


def test_oracle_is_bound_by_the_filters(unit_ratio_config):
    # One 8-core node: the third 4-core VM does not fit whatever the
    # scores say.
    settings = runner.Settings(fleet=fleet.FleetSpec(1, 8, 16384), seed=0,
                               duration=1200.0)
    result = oracle.OracleSimulation(
        unit_ratio_config, _workload(3), settings,
        np.zeros((3, 6), dtype=np.float32)).run()
    assert (result["placed"], result["rejected"]) == (2, 1)
