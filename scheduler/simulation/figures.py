"""The figures of a simulation run, from the nodes' load as the
simulator knows it (what they report).

Sampled at every report interval over every node (idle ones included):

- ``hot_host_minutes``: node-minutes at or above the hot threshold (the
  policy's HighUtilization, else 80 %) of cpu.percent.
- ``cpu_stddev_mean``: the mean over the samples of the standard
  deviation of the nodes' cpu.percent: how evenly load is spread.

Counted as they happen: ``hosts_used_peak`` (the most nodes holding at
least one instance at any moment), ``placed``, ``rejected`` (NoValidHost),
``migrations`` (carried out), and ``herd_max``: the most placements one
node received between two of its own reports, i.e. decided on the same
reported metrics.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass
class Figures:
    hosts: int
    hot_threshold: float
    sample_minutes: float
    vms: int = 0
    placed: int = 0
    rejected: int = 0
    migrations: int = 0
    herd_max: int = 0
    hosts_used_peak: int = 0
    hot_host_minutes: float = 0.0
    #: Samples taken and the sum of their standard deviations.
    samples: int = 0
    stddev_sum: float = 0.0
    #: Placements per node since its last report.
    since_report: np.ndarray = dataclasses.field(init=False)
    #: cpu.percent of every node at every sample, for the heat map.
    cpu_history: list[np.ndarray] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        self.since_report = np.zeros(self.hosts, dtype=np.int64)

    def placement(self, host: int) -> None:
        self.placed += 1
        self.since_report[host] += 1
        self.herd_max = max(self.herd_max, int(self.since_report[host]))

    def reported(self, hosts: np.ndarray) -> None:
        self.since_report[hosts] = 0

    def used(self, hosts_used: int) -> None:
        self.hosts_used_peak = max(self.hosts_used_peak, hosts_used)

    def sample(self, cpu_percent: np.ndarray) -> None:
        self.samples += 1
        self.stddev_sum += float(np.std(cpu_percent))
        self.hot_host_minutes += self.sample_minutes * int(
            np.count_nonzero(cpu_percent >= self.hot_threshold))
        self.cpu_history.append(cpu_percent.astype(np.float32))

    @property
    def cpu_stddev_mean(self) -> float:
        return self.stddev_sum / self.samples if self.samples else 0.0

    def as_dict(self) -> dict:
        return {"vms": self.vms, "placed": self.placed,
                "rejected": self.rejected,
                "hosts_used_peak": self.hosts_used_peak,
                "hot_host_minutes": round(self.hot_host_minutes, 3),
                "hot_threshold": self.hot_threshold,
                "cpu_stddev_mean": round(self.cpu_stddev_mean, 3),
                "herd_max": self.herd_max, "migrations": self.migrations}
