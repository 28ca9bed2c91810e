"""Balancers count an instance's measured load when its node reported it
within max_age, its claimed vCPUs otherwise (docs/operator-guide.md): in what
its departure relieves, in what it adds to the destination, and in which
instance moves first."""

import dataclasses
import datetime

import pytest

from scheduler.balancer import base
from scheduler.hosts import history as metric_history
from scheduler.hosts import instance_metrics as im
from scheduler.hosts import state as hm
from tests.unit.balancer.fakes import even
from tests.unit.balancer.fakes import history
from tests.unit.balancer.fakes import saving
from tests.unit.balancer.fakes import vm_count

NOW = datetime.datetime(2026, 11, 21, 12, 10)
MAX_AGE = 60
GIB = 1024 ** 3


@dataclasses.dataclass(frozen=True)
class VM:
    name: str
    vcpus: int
    memory_gib: float
    #: instance.cpu.percent reported (None: not reported).
    cpu: float | None = None
    #: Seconds since it was reported.
    age: float = 0.0
    #: instance.memory.used reported, GiB.
    used_gib: float | None = None
    #: False: the node reports it, but the scheduler has no claim of it.
    claimed: bool = True


def host(node: int, cpu: float | None, *vms: VM, vcpus: int = 16,
         can_migrate: bool = True) -> base.HostLoad:
    """A host as the planner hands it to balancers: its claims, and its
    instances' entries decoded into HostState.instance_metrics."""
    reported: dict[str, dict[str, hm.Metric]] = {}
    for vm in vms:
        when = NOW - datetime.timedelta(seconds=vm.age)
        values = {im.CPU_PERCENT: vm.cpu,
                  im.MEMORY_USED: None if vm.used_gib is None
                  else vm.used_gib * GIB}
        reported[vm.name] = {name: hm.Metric(value, when)
                             for name, value in values.items()
                             if value is not None}
    state = hm.HostState(
        node_id=node, uuid=f"n{node}", host=f"host-{node}",
        nodename=f"host-{node}", vcpus=vcpus,
        instances={vm.name for vm in vms if vm.claimed},
        instance_metrics=reported)
    cutoff = hm.stale_before(NOW, MAX_AGE)
    instances = tuple(
        base.measured(base.Instance(vm.name, vm.vcpus,
                                    int(vm.memory_gib * 1024), 10),
                      state, cutoff)
        for vm in vms if vm.claimed)
    return base.HostLoad(state=state, cpu_percent=cpu, instances=instances,
                         instance_count=len(instances),
                         can_migrate=can_migrate)


def first(balancer, hosts, **series) -> tuple[str, list[int]] | None:
    """The instance the balancer moves first and where it may go."""
    for proposal in balancer.propose(hosts, history(**series)):
        return (proposal.instance.uuid,
                [d.node_id for d in proposal.destinations])
    return None


BUSY_SMALL = VM("busy-small", 3, 4, cpu=100)
IDLE_BIG = VM("idle-big", 8, 2, cpu=2)


@pytest.mark.parametrize("vms, cpu, moved", [
    # The busy small VM, not the idle big one, is moved when that relieves
    # the host: assumed, both would bring host-1 under 80 and the big one,
    # with less memory, is cheaper to migrate; measured, the big one
    # relieves 1% (90 -> 89), the small one 18.75% (90 -> 71.25).
    ((BUSY_SMALL, IDLE_BIG), 90, "busy-small"),
    # Nothing brings host-1 (95) under 80 measured: the heaviest load
    # first, 12.5% against 1%. Assumed, the big one (50%) does.
    ((VM("busy", 2, 2, cpu=100), VM("idle", 8, 8, cpu=2)), 95, "busy"),
    # Among instances that are each enough, the cheapest to migrate: the
    # one using least memory, measured over claimed.
    ((VM("fat", 4, 8, cpu=100, used_gib=1), VM("thin", 4, 2, cpu=100,
                                               used_gib=1.5)), 90, "fat"),
])
def test_even_distribution_moves_by_measured_load(vms, cpu, moved):
    hosts = [host(1, cpu, *vms), host(2, 20)]
    found = first(even(), hosts, n1=[cpu] * 3, n2=[20] * 3)
    assert found == (moved, [2])


@pytest.mark.parametrize("vms, moved", [
    ((BUSY_SMALL, IDLE_BIG), "idle-big"),
    ((VM("busy", 2, 2, cpu=100), VM("idle", 8, 8, cpu=2)), "idle"),
])
@pytest.mark.parametrize("why", ["unreported", "stale", "unclaimed"])
def test_without_a_fresh_measurement_the_vcpus_are_assumed_busy(
        vms, moved, why):
    # What the balancer did before instance metrics, and still does for
    # an instance whose measurement it cannot use.
    if why == "unreported":
        vms = tuple(dataclasses.replace(vm, cpu=None) for vm in vms)
    elif why == "stale":
        vms = tuple(dataclasses.replace(vm, age=MAX_AGE + 1) for vm in vms)
    hosts = [host(1, 95 if moved == "idle" else 90, *vms), host(2, 20)]
    if why == "unclaimed":
        # The node reports the entries under other uuids than its claims.
        reported = hosts[0].state.instance_metrics
        hosts[0].state.instance_metrics = {
            f"other-{uuid}": values for uuid, values in reported.items()}
        hosts[0] = dataclasses.replace(hosts[0], instances=tuple(
            base.measured(dataclasses.replace(i, cpu_percent=None),
                          hosts[0].state, None)
            for i in hosts[0].instances))
    assert all(i.load_source == base.ASSUMED for i in hosts[0].instances)
    cpu = hosts[0].cpu_percent
    assert first(even(), hosts, n1=[cpu] * 3, n2=[20] * 3) == (moved, [2])


@pytest.mark.parametrize("cpu, destination, destinations", [
    # 8 vCPUs at 10% are 0.8 busy vCPUs, 5% of host-2: 70 -> 75 fits.
    (10, 70, [2]),
    # Assumed busy, they would be 50% of host-2: 120, no destination.
    (None, 70, []),
    (10, 76, []),       # 76 -> 81
])
def test_destination_load_is_predicted_from_the_measured_load(
        cpu, destination, destinations):
    hosts = [host(1, 90, VM("vm", 8, 8, cpu=cpu)), host(2, destination)]
    found = first(even(), hosts, n1=[90] * 3, n2=[destination] * 3)
    assert (found or (None, []))[1] == destinations


def test_power_saving_empties_the_busiest_instance_first():
    hosts = [host(1, 10, VM("idle-big", 8, 8, cpu=1),
                  VM("busy-small", 2, 2, cpu=90)),
             host(2, 50)]
    found = first(saving(), hosts, n1=[10] * 3, n2=[50] * 3)
    # 1.8 busy vCPUs before 0.08; assumed, idle-big (8 vCPUs, 50% of
    # host-2) would come first and find no room.
    assert found == ("busy-small", [2])


def test_even_vm_count_moves_the_cheapest_to_migrate_first():
    vms = [VM(f"vm-{n}", 1, 4, cpu=50) for n in range(11)]
    vms.append(VM("light", 4, 8, cpu=5, used_gib=0.5))
    hosts = [host(1, None, *vms), host(2, None)]
    assert first(vm_count(), hosts) == ("light", [2])


def test_instance_load_figures():
    measured = base.Instance("a", 4, 2048, 10, cpu_percent=25.0,
                             memory_used=GIB)
    assumed = base.Instance("b", 4, 2048, 10)
    assert (measured.load, measured.load_source, measured.migration_cost) \
        == (1.0, "measured", GIB)
    assert (assumed.load, assumed.load_source, assumed.migration_cost) \
        == (4.0, "assumed", 2 * GIB)
    # A negative measurement is no load, not a negative one.
    assert base.Instance("c", 4, 1, 1, cpu_percent=-3.0).load == 0.0


def test_measured_instances_measure_on_first_use_only(monkeypatch):
    eager = host(1, 90.0, BUSY_SMALL, IDLE_BIG)
    calls = []
    real = base.measured

    def counting(instance, state, cutoff, window=None):
        calls.append(instance.uuid)
        return real(instance, state, cutoff, window)

    monkeypatch.setattr(base, "measured", counting)
    raw = [base.Instance(vm.name, vm.vcpus, int(vm.memory_gib * 1024), 10)
           for vm in (BUSY_SMALL, IDLE_BIG)]
    lazy = base.MeasuredInstances(raw, eager.state,
                                  hm.stale_before(NOW, MAX_AGE))
    assert len(lazy) == 2 and lazy and calls == []
    assert tuple(lazy) == eager.instances and lazy == eager.instances
    assert lazy[0].cpu_percent == 100 and lazy[1].load_source == base.MEASURED
    assert calls == ["busy-small", "idle-big"]
    assert hash(lazy) == hash(eager.instances)


def test_with_a_window_an_instance_counts_at_its_mean_over_it():
    state = host(1, 90.0, BUSY_SMALL, IDLE_BIG).state
    reported = state.instance_metrics["busy-small"]["instance.cpu.percent"]
    held = metric_history.EMPTY
    for minutes_ago, value in ((2, 20.0), (1, 40.0), (0, 100.0)):
        held = held.appended({"busy-small": hm.Metric(
            value, reported.timestamp - datetime.timedelta(
                minutes=minutes_ago))}, 3600.0)
    state.instance_history = held
    instance = base.Instance("busy-small", BUSY_SMALL.vcpus, 1024, 10)
    cutoff = hm.stale_before(NOW, MAX_AGE)
    # One reading without a window; the level (mean 53.3) with one.
    assert base.measured(instance, state, cutoff).cpu_percent == 100.0
    assert base.measured(instance, state, cutoff,
                         3600.0).cpu_percent == pytest.approx(160 / 3)
    # A stale reading stays unmeasured, history or not.
    assert base.measured(instance, state, reported.timestamp
                         + datetime.timedelta(seconds=1),
                         3600.0).cpu_percent is None
