"""Simulation runs on tiny workloads whose figures are worked out by
hand: steady VMs (avgcpu = p95maxcpu = maxcpu) run at their average."""

import datetime
import types

import numpy as np
import pytest

from scheduler.common import clock
from scheduler.simulation import fleet
from scheduler.simulation import runner
from scheduler.simulation import trace

SECOND = datetime.timedelta(seconds=1)


def _steady(*vms: tuple[float, float, int, int, float]) -> trace.Workload:
    """VMs as (created, deleted, cores, memory_mb, cpu percent)."""
    created, deleted, cores, memory, cpu = (
        np.array(column) for column in zip(*vms, strict=True))
    return trace.Workload(
        created=created.astype(float), deleted=deleted.astype(float),
        maxcpu=cpu.astype(float), avgcpu=cpu.astype(float),
        p95maxcpu=cpu.astype(float), cores=cores.astype(np.int64),
        memory_mb=memory.astype(np.int64),
        interactive=np.zeros(len(created), dtype=bool))


def _run(conf, workload, hosts=2, duration=600.0, vcpus=4,
         memory_mb=8192) -> dict:
    settings = runner.Settings(
        fleet=fleet.FleetSpec(hosts, vcpus, memory_mb), seed=0,
        report_interval=60.0, duration=duration)
    return runner.Simulation(conf, workload, settings).run()


def test_one_busy_vm_figures(unit_ratio_config):
    # A 4-core VM at 90 % on a 4-core node, from t=0 to t=600; the other
    # node idle. Samples at 60, 120, ..., 600 s; the VM has ended when
    # the last one is taken.
    result = _run(unit_ratio_config, _steady((0, 600, 4, 1024, 90.0)))
    assert result["vms"] == result["placed"] == 1
    assert result["rejected"] == 0
    assert result["hot_host_minutes"] == 9.0
    # std([90, 0]) = 45 in 9 samples of 10, 0 in the last.
    assert result["cpu_stddev_mean"] == pytest.approx(40.5)
    assert result["hosts_used_peak"] == 1
    assert result["herd_max"] == 1
    assert result["migrations"] == 0
    assert result["sim_seconds"] == 600.0


def test_each_event_kind_is_charged_its_own_time(unit_ratio_config,
                                                  monkeypatch):
    # A clock that moves only inside the handlers, by a different power
    # of two for each kind (sums stay exact): each kind's total must be
    # its own calls times its own step, under its own name.
    now = [0.0]
    monkeypatch.setattr(runner, "time", types.SimpleNamespace(
        perf_counter=lambda: now[0], process_time=lambda: 0.0))
    handlers = {"slots": "_new_slot", "ends": "_end", "reports": "_report",
                "samples": "_sample", "balancing": "_balance",
                "arrivals": "_arrive"}
    calls = dict.fromkeys(handlers, 0)

    def charged(name, handler, step):
        def run(self, *args):
            calls[name] += 1
            now[0] += step
            return handler(self, *args)
        return run

    for power, (name, method) in enumerate(handlers.items()):
        monkeypatch.setattr(runner.Simulation, method, charged(
            name, getattr(runner.Simulation, method), 2.0 ** power))
    conf = unit_ratio_config
    conf.set_override("interval", 120, group="balancer")
    result = _run(conf, _steady((0, 300, 4, 1024, 90.0)))
    spent = result["wall_seconds_by_event"]
    assert tuple(spent) == runner.EVENT_NAMES
    assert all(calls.values()), calls
    for power, name in enumerate(handlers):
        assert spent[name] == calls[name] * 2.0 ** power, name
    assert result["wall_seconds"] == sum(spent.values())


def test_requests_between_two_reports_count_as_a_herd(unit_ratio_config):
    # One node, three VMs before its first report at 60 s, one after.
    work = _steady((1, 900, 1, 1024, 10.0), (2, 900, 1, 1024, 10.0),
                   (3, 900, 1, 1024, 10.0), (70, 900, 1, 1024, 10.0))
    result = _run(unit_ratio_config, work, hosts=1, duration=120.0)
    assert result["herd_max"] == 3
    assert result["placed"] == 4 and result["hosts_used_peak"] == 1
    # 4 x 0.1 vCPU busy of 4: 10 %.
    assert result["cpu_stddev_mean"] == 0.0
    assert result["hot_host_minutes"] == 0.0


def test_what_fits_nowhere_is_rejected(unit_ratio_config):
    # 8 GiB nodes: the second 6 GiB VM fits only on the other node, the
    # third on none.
    work = _steady((0, 500, 1, 6144, 5.0), (1, 500, 1, 6144, 5.0),
                   (2, 500, 1, 6144, 5.0))
    result = _run(unit_ratio_config, work, duration=300.0)
    assert (result["placed"], result["rejected"]) == (2, 1)
    assert result["hosts_used_peak"] == 2


def test_nodes_report_what_they_host(unit_ratio_config):
    work = _steady((0, 900, 2, 2048, 50.0))
    settings = runner.Settings(fleet=fleet.FleetSpec(1, 4, 8192),
                               report_interval=60.0, duration=60.0)
    simulation = runner.Simulation(unit_ratio_config, work, settings)
    simulation.run()
    with clock.simulated(clock.SimulatedClock(runner.START)) as sim_clock:
        sim_clock.advance_to(61.0)
        host, = simulation.manager.host_manager.host_states()
    # 2 cores at 50 % of a 4-core node; the VM's memory in use.
    assert host.metrics["cpu.percent"].value == 25.0
    used = host.metrics["memory.used"].value
    assert used == (fleet.HOST_RESERVED_MB + 2048) * fleet.MIB
    assert host.instances == {fleet.instance_uuid(0)}
    # Reported at 60 s of simulated time: not pending any more.
    assert host.metrics_updated_at == runner.START.replace(minute=1)
    assert host.vcpus_pending == 0


def _packing_then_balancing(conf) -> None:
    """Place by packing (least free RAM first), balance with
    evenly_distributed: hot nodes for the balancer to relieve."""
    conf.set_override("default_policy", "evenly_distributed",
                      group="scheduler")
    conf.set_override("weight_classes", ["RAMWeigher"],
                      group="filter_scheduler")
    conf.set_override("ram_weight_multiplier", -1.0,
                      group="filter_scheduler")


def test_balancer_moves_are_carried_out_and_counted(unit_ratio_config):
    # Two 2-core VMs at 100 % packed on node 0 (both nodes equal: the
    # first wins, then fills); node 0 is at 100 % for minutes, so the
    # balancer moves one of them.
    _packing_then_balancing(unit_ratio_config)
    work = _steady((0, 3600, 2, 1024, 100.0), (1, 3600, 2, 1024, 100.0))
    result = _run(unit_ratio_config, work, duration=900.0)
    assert result["migrations"] >= 1
    assert result["hot_host_minutes"] < 15


def test_pending_claims_keep_a_burst_from_herding(unit_ratio_config):
    # Identical idle nodes weighed by cpu.percent alone: each request of
    # a burst before any report sees the earlier ones as pending load,
    # the first of them included (claimed the instant the nodes
    # reported).
    unit_ratio_config.set_override("weight_classes", ["MetricsWeigher"],
                                   group="filter_scheduler")
    unit_ratio_config.set_override("weight_setting", "cpu.percent=-1.0",
                                   group="metrics")
    work = _steady(*((second, 900, 1, 512, 50.0) for second in range(5)))
    result = _run(unit_ratio_config, work, hosts=5, duration=60.0)
    assert result["herd_max"] == 1 and result["hosts_used_peak"] == 5


def test_each_cluster_is_balanced(unit_ratio_config):
    # Two clusters of two nodes, each with a node packed hot: the
    # balancer plans one migration per cluster and tick, so both move
    # at the first tick.
    _packing_then_balancing(unit_ratio_config)
    work = _steady(*((second, 3600, 2, 1024, 100.0) for second in range(4)))
    settings = runner.Settings(
        fleet=fleet.FleetSpec(4, 4, 8192, clusters=2), seed=0,
        report_interval=60.0, duration=240.0)
    simulation = runner.Simulation(unit_ratio_config, work, settings)
    result = simulation.run()
    assert fleet.FleetSpec(4, 4, 8192, clusters=2).cluster(3) == "sim-c1"
    assert result["migrations"] == 2
    assert all(len(vms) == 1 for vms in simulation.on_host)


def test_the_engine_sees_every_move_before_the_next_arrival(
        unit_ratio_config):
    # Migrations are carried out right after the tick that planned them;
    # the host cache must see them (and every other write) by the next
    # decision, not only at its periodic late-change check.
    _packing_then_balancing(unit_ratio_config)
    work = _steady(*((minute * 30, 3600, 2, 1024, 100.0)
                     for minute in range(12)))
    settings = runner.Settings(fleet=fleet.FleetSpec(6, 4, 8192),
                               report_interval=60.0, duration=400.0)
    simulation = runner.Simulation(unit_ratio_config, work, settings)
    arrive = simulation._arrive
    mismatches = []

    def checked_arrival(vm: int) -> None:
        cached = {simulation.fleet.index_of[host.node_id]: host.instances
                  for host in simulation.manager.host_manager.host_states()}
        for host, vms in enumerate(simulation.on_host):
            expected = {fleet.instance_uuid(v) for v in vms}
            if cached[host] != expected:
                mismatches.append((vm, host))
        arrive(vm)

    simulation._arrive = checked_arrival
    result = simulation.run()
    assert result["migrations"] >= 1
    assert mismatches == []


def test_by_default_every_vm_of_the_workload_arrives(unit_ratio_config):
    # The default duration runs up to the last creation, included, also
    # for a workload whose first VM comes after the start.
    work = _steady((30, 900, 1, 512, 10.0), (45, 900, 1, 512, 10.0))
    settings = runner.Settings(fleet=fleet.FleetSpec(2, 4, 8192))
    result = runner.Simulation(unit_ratio_config, work, settings).run()
    assert result["vms"] == result["placed"] == 2
    assert result["sim_seconds"] == 45.0


def test_mixed_fleet_cpu_percent_per_node_cores(unit_ratio_config):
    # A 4-core VM at 50 % (2 cores busy) lands on the big node (most free
    # RAM): 2 of 16 cores is 12.5 %, under the small node's 50 %.
    spec = fleet.FleetSpec.from_kinds([fleet.NodeKind(1, 4, 8192),
                                       fleet.NodeKind(1, 16, 65536)])
    settings = runner.Settings(fleet=spec, seed=0, duration=600.0)
    simulation = runner.Simulation(unit_ratio_config,
                                   _steady((0, 900, 4, 1024, 50.0)),
                                   settings)
    result = simulation.run()
    assert int(simulation.host_of[0]) == 1
    assert result["p95_host_cpu"] == 12.5
    assert result["hot_host_minutes"] == 0.0


def test_overload_counts_demand_beyond_cores(unit_ratio_config):
    conf = unit_ratio_config
    conf.set_override("cpu_allocation_ratio", 2.0, group="filter_scheduler")
    # Two 4-core VMs at 75 % on one 4-core node: 6 cores of demand, 2
    # beyond; cpu.percent shows only 100.
    result = _run(conf, _steady((0, 900, 4, 1024, 75.0),
                                (0, 900, 4, 1024, 75.0)), hosts=1)
    assert result["overload_core_minutes"] == 10 * 2.0
    assert result["hot_host_minutes"] == 10.0
    assert result["vm_hot_minutes"] == 20.0
    assert [day["overload_core_minutes"] for day in result["days"]] == [20.0]


def test_days_split_at_midnight(unit_ratio_config):
    # A VM at 90 % on a 4-core node from 23:50 of day 0 to 00:10 of day
    # 1: hot at the samples of 23:51 .. 00:00 (the one at midnight is day
    # 0's) and 00:01 .. 00:09 (at 00:10 it has ended: ends come first).
    result = _run(unit_ratio_config,
                  _steady((86400 - 600, 86400 + 600, 4, 1024, 90.0)),
                  hosts=1, duration=86400 + 1200)
    days = {day["day"]: day for day in result["days"]}
    assert days[0]["placed"] == 1
    assert days[0]["hot_host_minutes"] == 10.0
    assert days[1]["hot_host_minutes"] == 9.0
    assert sorted(days) == [0, 1]


def test_a_run_reports_its_cpu_time(unit_ratio_config, monkeypatch):
    spent = iter([100.0, 102.5])
    monkeypatch.setattr(runner, "time", types.SimpleNamespace(
        perf_counter=lambda: 0.0, process_time=lambda: next(spent)))
    result = _run(unit_ratio_config, _steady((0, 300, 4, 1024, 90.0)))
    assert result["cpu_seconds"] == 2.5


def test_a_node_left_idle_reports_anew_across_the_traces_slots(
        unit_ratio_config, monkeypatch):
    # Its VMs gone by 200 s, the node reports an idle node at every
    # interval after, each with its own time, whatever slot the trace is
    # in: its report's text is built once, then stamped. Their demands
    # (0.1 and 0.2 vCPU) do not subtract to exactly 0.0: an idle node is
    # exactly idle, or its kept text would carry the remainder.
    work = _steady((0, 150, 1, 512, 10.0), (0, 200, 2, 512, 10.0))
    settings = runner.Settings(fleet=fleet.FleetSpec(1, 4, 8192),
                               report_interval=60.0, duration=900.0)
    simulation = runner.Simulation(unit_ratio_config, work, settings)
    built = []
    make = fleet.SimulatedFleet._metrics

    def counted(self, stamp, cpu, memory_mb_used, host):
        built.append(cpu)
        return make(self, stamp, cpu, memory_mb_used, host)

    monkeypatch.setattr(fleet.SimulatedFleet, "_metrics", counted)
    simulation.run()
    with clock.simulated(clock.SimulatedClock(runner.START)) as sim_clock:
        sim_clock.advance_to(901.0)
        host, = simulation.manager.host_manager.host_states()
    assert host.metrics["cpu.percent"].value == 0.0
    assert host.metrics["memory.used"].value == (
        fleet.HOST_RESERVED_MB * fleet.MIB)
    assert not host.instances
    reported = host.metrics_updated_at
    assert abs(reported - runner.START.replace(minute=15)) < SECOND
    assert {metric.timestamp for metric in host.metrics.values()} == {
        reported}
    # Built once idle, at the first report after 200 s, then only
    # stamped through the slots at 300, 600 and 900 s.
    assert built[-1] == 0.0
    assert built[-2] > 0.0
