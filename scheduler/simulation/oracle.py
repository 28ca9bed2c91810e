"""``simulate --oracle``: placement knowing every VM's future CPU.

The ceiling of what placement alone could reach on a workload: the run
knows in advance every VM's utilisation in every 5-minute slot of the
simulated span (its readings, else the CPU model's series, computed
before the run by ``readings.series``: the very load the other runs see)
and never migrates.

How it decides: it keeps a matrix of the projected demand (cores) of
every node in every future slot, to which each placement adds the VM's
demand series over its life (up to its deletion or the end of the span).
For an arriving VM it scores every node by what adding the VM there
would do to that node's future: first the number of slots that would
turn hot (demand >= the hot threshold x the node's cores), then, on a
tie, the increase of its core-slots beyond its cores, then its mean
projected load over the VM's life. The score reaches the real engine
through a weigher of its own (``OracleWeigher``), the only weigher of the
run: the configuration's filters still choose the candidates and claims
are made as in any run, so the oracle is bound by the same capacity.
"""

import dataclasses

import numpy as np
from oslo_config import cfg

from scheduler import weights
from scheduler.engine import filter_scheduler
from scheduler.hosts.state import HostState
from scheduler.manager import SchedulerManager
from scheduler.request.spec import RequestSpec
from scheduler.simulation import cpu_model
from scheduler.simulation import fleet as fleet_mod
from scheduler.simulation import readings
from scheduler.simulation import runner
from scheduler.simulation import trace

#: Weights of the score's terms: a slot turning hot outweighs any
#: overload increase, which outweighs any mean load (both bounded well
#: below the weight above them for nodes of up to ~1,000 cores).
_HOT_WEIGHT = 1e9
_OVERLOAD_WEIGHT = 1e3


class OracleWeigher(weights.BaseHostWeigher):
    """Raw weight: the score the oracle set for the host before this
    decision (higher is better); hosts it did not score are unavailable.
    Not an entry point: only ``--oracle`` runs it."""

    def __init__(self, conf: cfg.ConfigOpts):
        super().__init__(conf)
        self.scores: dict[str, float] = {}

    def raw_weight(self, host: HostState, spec: RequestSpec) -> float | None:
        return self.scores.get(host.uuid)


class FutureDemand:
    """Projected demand (cores) of every node in every slot."""

    def __init__(self, cores: np.ndarray, slots: int, hot_threshold: float):
        self.cores = cores.astype(float)
        self.hot = hot_threshold / 100.0 * self.cores
        self.demand = np.zeros((len(cores), slots))

    def scores(self, series: np.ndarray, first: int) -> np.ndarray:
        """Every node's score (higher is better) for adding ``series``
        (cores per slot) from slot ``first`` on."""
        span = slice(first, first + len(series))
        before = self.demand[:, span]
        after = before + series
        hot = self.hot[:, None]
        turned_hot = (np.count_nonzero(after >= hot, axis=1)
                      - np.count_nonzero(before >= hot, axis=1))
        cores = self.cores[:, None]
        overload = (np.maximum(after - cores, 0.0).sum(axis=1)
                    - np.maximum(before - cores, 0.0).sum(axis=1))
        mean = (after.mean(axis=1) / self.cores if len(series)
                else np.zeros(len(self.cores)))
        return -(_HOT_WEIGHT * turned_hot + _OVERLOAD_WEIGHT * overload
                 + mean)

    def add(self, host: int, series: np.ndarray, first: int) -> None:
        self.demand[host, first:first + len(series)] += series

    def remove(self, host: int, series: np.ndarray, first: int,
               now: int) -> None:
        """Take back what is left of ``series`` (placed at ``first``)
        from slot ``now`` on: the VM left the node early."""
        start = max(now, first)
        self.demand[host, start:first + len(series)] -= \
            series[start - first:]


class OracleSimulation(runner.Simulation):
    """A run placing by ``FutureDemand`` through ``OracleWeigher``;
    no balancing. ``matrix`` is ``readings.series`` of the workload."""

    def __init__(self, conf: cfg.ConfigOpts, workload: trace.Workload,
                 settings: runner.Settings, matrix: np.ndarray,
                 counts: readings.Counts | None = None,
                 hot_threshold: float = runner.DEFAULT_HOT):
        super().__init__(conf, workload, settings,
                         source=readings.Precomputed(matrix, counts))
        self.matrix = matrix
        self.hot_threshold = hot_threshold
        self.weigher = OracleWeigher(conf)
        self.future = FutureDemand(settings.fleet.node_vcpus(),
                                   matrix.shape[1], hot_threshold)
        self.placed_at: dict[int, int] = {}

    def _manager(self) -> SchedulerManager:
        pipeline = dataclasses.replace(
            filter_scheduler.Pipeline.from_conf(self.conf), weighers=(),
            normalization="minmax")
        scheduler = filter_scheduler.FilterScheduler(self.conf,
                                                     pipeline=pipeline)
        # Not loaded by name: the weigher is no entry point operators
        # could list, only this run's.
        scheduler.weighers.append(self.weigher)
        scheduler._factors[self.weigher.name] = 1.0
        return SchedulerManager(self.conf, scheduler=scheduler)

    def _hot_threshold(self) -> float:
        return self.hot_threshold

    def _balance_interval(self) -> float:
        return 0.0

    def _series(self, vm: int) -> tuple[np.ndarray, int]:
        """The VM's demand (cores) per slot over its life in the span,
        and its first slot."""
        work = self.workload
        first = cpu_model.CpuModel.slot(float(work.created[vm]))
        slots = self.matrix.shape[1]
        last = min(int(np.ceil(float(work.deleted[vm]) / cpu_model.SLOT)),
                   slots)
        first = min(first, slots - 1)
        last = max(last, first + 1)
        cores = float(work.cores[vm])
        return self.matrix[vm, first:last] * (cores / 100.0), first

    def _arrive(self, vm: int) -> None:
        series, first = self._series(vm)
        scores = self.future.scores(series, first)
        self.weigher.scores = {fleet_mod.node_uuid(host): float(score)
                               for host, score in enumerate(scores)}
        super()._arrive(vm)
        host = int(self.host_of[vm])
        if host >= 0:
            self.future.add(host, series, first)
            self.placed_at[vm] = first

    def _end(self, at: float, vm: int) -> None:
        host = int(self.host_of[vm])
        super()._end(at, vm)
        first = self.placed_at.pop(vm, None)
        if host >= 0 and first is not None:
            series, _ = self._series(vm)
            self.future.remove(host, series, first,
                               cpu_model.CpuModel.slot(at) + 1)


def slots_of(settings: runner.Settings, workload: trace.Workload) -> int:
    """Slots of the simulated span (and one past it)."""
    return int(settings.span(workload) // cpu_model.SLOT) + 2
