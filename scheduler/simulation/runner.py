"""The simulation loop: a workload replayed against the real engine.

Events happen in simulated time, in this order when they coincide:

1. a new 5-minute utilisation slot starts (``cpu_model``, with the
   ``readings`` of ``--cpu-readings`` in its place where a VM has some),
2. instances end: ``SchedulerManager.release``,
3. nodes report (``fleet``), each at its own phase of the report interval,
4. the figures are sampled, once per report interval,
5. the balancing task ticks every ``[balancer] interval``, as in the
   service (``PeriodicBalancer``); the migrations it plans are carried
   out a microsecond later (``MigrationStore.finish``),
6. instances arrive: ``SchedulerManager.select_destinations``.

Everything the scheduler decides goes through the manager the service
runs, against the configured database, on
``scheduler.common.clock``'s simulated time; the simulator only plays
the nodes and the clients.
"""

import dataclasses
import datetime
import heapq
import time
import uuid
from collections.abc import Callable

import numpy as np
from oslo_config import cfg

from scheduler import exception
from scheduler.common import clock
from scheduler.db import api as db_api
from scheduler.db import schema
from scheduler.manager import SchedulerManager
from scheduler.placement import migrations as migrations_mod
from scheduler.placement.balance_task import PeriodicBalancer
from scheduler.simulation import cpu_model
from scheduler.simulation import fleet as fleet_mod
from scheduler.simulation import readings
from scheduler.simulation import trace
from scheduler.simulation.figures import DAY
from scheduler.simulation.figures import Figures

#: Simulated time starts here, a Monday at midnight UTC.
START = datetime.datetime(2026, 1, 5)
#: Simulated seconds an event takes when another ran at the same instant:
#: every write then gets a stamp of its own, later than what the host
#: cache last read, as writes do in real time (a row stamped exactly at
#: the cache's watermark is only found by its periodic late-change check).
_STEP = 1e-6
DEFAULT_HOT = 80.0

# Event kinds, in the order they run at equal times.
_SLOT, _END, _REPORT, _SAMPLE, _BALANCE, _ARRIVAL = range(6)
#: How ``wall_seconds_by_event`` names the kinds: what costs time in a
#: run, where the host cache's reads fall on the decisions (arrivals) and
#: the balancing ticks that refresh it, and ``reports`` is the nodes'
#: writes alone.
EVENT_NAMES = ("slots", "ends", "reports", "samples", "balancing",
               "arrivals")


@dataclasses.dataclass(frozen=True)
class Settings:
    fleet: fleet_mod.FleetSpec
    seed: int = 0
    report_interval: float = 60.0
    #: Simulated seconds; None: the workload's span.
    duration: float | None = None
    #: ``--cpu-readings`` files (``readings``).
    readings: tuple[str, ...] = ()

    def span(self, workload: trace.Workload) -> float:
        """The simulated seconds of a run of ``workload``."""
        return (workload.span if self.duration is None
                else self.duration)


class Simulation:
    """One run of ``workload`` under ``conf`` (whose ``[database]
    connection`` must name an empty or simulator-only database).

    VMs' utilisation comes from ``source`` (anything with
    ``utilisation(slot)`` and ``counts()``; by default the model overlaid
    with ``settings.readings``)."""

    def __init__(self, conf: cfg.ConfigOpts, workload: trace.Workload,
                 settings: Settings,
                 progress: Callable[[float], None] | None = None,
                 source=None):
        self.conf = conf
        self.workload = workload
        self.settings = settings
        self.progress = progress
        self.hosts = settings.fleet.hosts
        self.vcpus = settings.fleet.node_vcpus()
        vms = len(workload)
        self.uuids = [fleet_mod.instance_uuid(vm) for vm in range(vms)]
        self.host_of = np.full(vms, -1, dtype=np.int64)
        self.on_host: list[set[int]] = [set() for _ in range(self.hosts)]
        self.vm_count = np.zeros(self.hosts, dtype=np.int64)
        self.hosts_used = 0
        self.busy_vcpus = np.zeros(self.hosts)
        self.memory_mb_used = np.full(self.hosts,
                                      fleet_mod.HOST_RESERVED_MB, np.int64)
        self.cpu = source or readings.Overlay(workload, settings.seed,
                                              settings.readings)
        self.utilisation = np.zeros(vms)
        #: What a node's report depends on: the utilisation slot, and how
        #: often instances came to or left each host.
        self.slot_number = -1
        self.host_changes = np.zeros(self.hosts, dtype=np.int64)
        self._events: list[tuple] = []
        self._sequence = 0
        #: Wall seconds spent in each event kind's handler.
        self._spent = [0.0] * len(EVENT_NAMES)

    def run(self) -> dict:
        """Replay the workload; the figures as a dict (``Figures``) plus
        ``sim_seconds``, ``wall_seconds``, ``cpu_seconds`` (the process's
        CPU time, all its threads: on a shared machine the steadier of
        the two) and ``wall_seconds_by_event`` (``EVENT_NAMES``: seconds
        spent handling each kind)."""
        began, cpu_began = time.perf_counter(), time.process_time()
        duration = self.settings.span(self.workload)
        engine = db_api.get_engine(self.conf)
        schema.db_sync(engine)
        with clock.simulated(clock.SimulatedClock(START)) as sim_clock:
            self.fleet = fleet_mod.SimulatedFleet(engine,
                                                  self.settings.fleet)
            self.fleet.create()
            self.manager = self._manager()
            self._clock = sim_clock
            # What scheduler-service runs every [balancer] interval.
            self.balancer = PeriodicBalancer(self.conf, self.manager.planner)
            self.migrations = migrations_mod.MigrationStore(self.conf)
            self.node_index = {
                state.uuid: self.fleet.index_of[state.node_id]
                for state in self.manager.host_manager.host_states()}
            self.figures = Figures(
                hosts=self.hosts, hot_threshold=self._hot_threshold(),
                sample_minutes=self.settings.report_interval / 60.0)
            self._schedule_ticks()
            self._loop(sim_clock, duration)
            self.manager.deferred_releases.wait_until_done(5.0)
        result = self.figures.as_dict()
        counts = self.cpu.counts()
        if counts is not None:
            result.update(counts.as_dict())
            result["readings_problems"] = counts.problems
        result["sim_seconds"] = duration
        result["wall_seconds"] = round(time.perf_counter() - began, 3)
        result["cpu_seconds"] = round(time.process_time() - cpu_began, 3)
        result["wall_seconds_by_event"] = dict(
            zip(EVENT_NAMES, self._spent, strict=True))
        return result

    def _manager(self) -> SchedulerManager:
        """The manager the run places through (``oracle`` gives its
        own)."""
        return SchedulerManager(self.conf)

    def _policy(self):
        """The cluster policy of the nodes (of their first cluster: the
        simulator maps no cluster to a policy of its own)."""
        return self.manager.policies.for_cluster(
            self.settings.fleet.cluster(0))

    def _hot_threshold(self) -> float:
        policy = self._policy()
        if policy is None:
            return DEFAULT_HOT
        return float(policy.balancer_parameters.get("HighUtilization",
                                                    DEFAULT_HOT))

    # Events

    def _push(self, at: float, kind: int, payload: int = 0) -> None:
        self._sequence += 1
        heapq.heappush(self._events, (at, kind, self._sequence, payload))

    def _schedule_ticks(self) -> None:
        interval = self.settings.report_interval
        self.phase_hosts = fleet_mod.report_phases(self.hosts)
        phases = len(self.phase_hosts)
        for phase in range(phases):
            self._push(interval * (phase + 1) / phases, _REPORT, phase)
        self._push(interval, _SAMPLE)
        self._push(0.0, _SLOT)
        self.balance_interval = self._balance_interval()
        if self.balance_interval:
            self._push(self.balance_interval, _BALANCE)

    def _balance_interval(self) -> float:
        # The service ticks whenever an interval is set; a tick plans
        # nothing in clusters whose policy has no balancer.
        return float(self.balancer.interval)

    def _loop(self, sim_clock: clock.SimulatedClock,
              duration: float) -> None:
        created = self.workload.created
        arrivals = int(np.searchsorted(created, duration, side="right"))
        self.figures.vms = arrivals
        handlers = {_SLOT: self._new_slot, _END: self._end,
                    _REPORT: self._report, _SAMPLE: self._sample,
                    _BALANCE: self._balance}
        spent = self._spent
        following = 0
        while True:
            next_arrival = (created[following] if following < arrivals
                            else np.inf)
            began = time.perf_counter()
            if self._events and self._events[0][0] <= next_arrival:
                at, kind, _, payload = heapq.heappop(self._events)
                if at > duration:
                    break
                self._advance(at)
                self.figures.day = int(at // DAY)
                handlers[kind](at, payload)
            elif following < arrivals:
                kind = _ARRIVAL
                self._advance(float(next_arrival))
                self.figures.day = int(next_arrival // DAY)
                self._arrive(following)
                following += 1
            else:
                break
            spent[kind] += time.perf_counter() - began
            if self.progress is not None:
                self.progress(sim_clock.seconds)
        sim_clock.advance_to(max(sim_clock.seconds, duration))

    def _advance(self, at: float) -> None:
        clock_now = self._clock.seconds
        self._clock.advance_to(at if at > clock_now else clock_now + _STEP)

    def _new_slot(self, at: float, _payload: int) -> None:
        slot = cpu_model.CpuModel.slot(at)
        self.slot_number = slot
        self.utilisation = self.cpu.utilisation(slot)
        placed = self.host_of >= 0
        # As floats even when nothing is placed (bincount then gives ints).
        self.busy_vcpus = np.bincount(
            self.host_of[placed], minlength=self.hosts,
            weights=(self.workload.cores * self.utilisation / 100.0)[placed]
        ).astype(float)
        self._push((slot + 1) * cpu_model.SLOT, _SLOT)

    def _demand(self, vm: int) -> float:
        return float(self.workload.cores[vm] * self.utilisation[vm] / 100.0)

    def _arrive(self, vm: int) -> None:
        work = self.workload
        cores, memory_mb = int(work.cores[vm]), int(work.memory_mb[vm])
        spec = {"flavor": {"name": f"sim.{cores}c.{memory_mb}m",
                           "vcpus": cores, "memory_mb": memory_mb,
                           "root_gb": 0}}
        try:
            selection = self.manager.select_destinations(
                spec, [self.uuids[vm]])
        except exception.NoValidHost:
            self.figures.rejection()
            return
        host = self.node_index[selection[0][0]["uuid"]]
        self._place(vm, host)
        self.figures.placement(host)
        if work.deleted[vm] < np.inf:
            self._push(float(work.deleted[vm]), _END, vm)

    def _place(self, vm: int, host: int) -> None:
        self.host_of[vm] = host
        self.host_changes[host] += 1
        if not self.on_host[host]:
            self.hosts_used += 1
            self.figures.used(self.hosts_used)
        self.on_host[host].add(vm)
        self.vm_count[host] += 1
        self.busy_vcpus[host] += self._demand(vm)
        self.memory_mb_used[host] += self.workload.memory_mb[vm]

    def _remove(self, vm: int) -> int:
        host = int(self.host_of[vm])
        self.host_of[vm] = -1
        self.host_changes[host] += 1
        self.on_host[host].discard(vm)
        self.vm_count[host] -= 1
        if not self.on_host[host]:
            self.hosts_used -= 1
            # Exactly idle: demands taken off in another order than they
            # were added leave a rounding remainder, which the node's
            # report (kept while it stays idle) would carry.
            self.busy_vcpus[host] = 0.0
        else:
            self.busy_vcpus[host] = max(self.busy_vcpus[host]
                                        - self._demand(vm), 0.0)
        self.memory_mb_used[host] -= self.workload.memory_mb[vm]
        return host

    def _end(self, _at: float, vm: int) -> None:
        if self.host_of[vm] < 0:
            return
        self.manager.release(self.uuids[vm])
        self._remove(vm)

    def _cpu_percent(self, hosts: np.ndarray | slice) -> np.ndarray:
        return np.minimum(100.0 * self.busy_vcpus[hosts]
                          / self.vcpus[hosts], 100.0)

    def _report(self, at: float, phase: int) -> None:
        hosts = self.phase_hosts[phase]
        uuids, utilisation = self.uuids, self.utilisation
        slot = self.slot_number
        # A node without instances reports the same whatever the trace's
        # slot: its report is rewritten only when its instances change.
        self.fleet.report(
            hosts, self._cpu_percent(hosts), self.memory_mb_used[hosts],
            [(slot if held else -1, changes) for held, changes in zip(
                self.vm_count[hosts].tolist(),
                self.host_changes[hosts].tolist(), strict=True)],
            lambda host: [(uuids[vm], utilisation[vm])
                          for vm in self.on_host[host]])
        self.figures.reported(hosts)
        self._push(at + self.settings.report_interval, _REPORT, phase)

    def _sample(self, at: float, _payload: int) -> None:
        # A sample stands for the interval that ends at it: one taken at
        # midnight belongs to the day that ends.
        self.figures.day = max(int(np.ceil(at / DAY)) - 1, 0)
        self.figures.sample(
            self._cpu_percent(slice(None)),
            np.maximum(self.busy_vcpus - self.vcpus, 0.0), self.vm_count)
        self._push(at + self.settings.report_interval, _SAMPLE)

    def _balance(self, at: float, _payload: int) -> None:
        planned_now = self.balancer.tick()
        # Carried out after the planning, not at its very instant.
        self._advance(self._clock.seconds)
        for planned in planned_now:
            if not self.migrations.finish(planned["uuid"],
                                          migrations_mod.COMPLETED):
                continue
            vm = uuid.UUID(planned["instance_uuid"]).int - 1
            self._remove(vm)
            self._place(vm, self.fleet.index_of[planned["dest_node_id"]])
            self.figures.migration()
        self._push(at + self.balance_interval, _BALANCE)
