"""The figures of a simulation run, from the nodes' load as the
simulator knows it (what they report).

Sampled at every report interval over every node (idle ones included):

- ``hot_host_minutes``: node-minutes at or above the hot threshold (the
  policy's HighUtilization, else 80 %) of cpu.percent.
- ``cpu_stddev_mean``: the mean over the samples of the standard
  deviation of the nodes' cpu.percent: how evenly load is spread.
- ``vm_hot_minutes``: VM-minutes spent on a node at or above the hot
  threshold: how many tenants were slowed, and for how long.
- ``overload_core_minutes``: core-minutes of CPU demand beyond a node's
  cores (its uncapped demand minus its cores, when positive): how far past
  its cores a node went, which cpu.percent (capped at 100) cannot show.
- ``p95_host_cpu``: the 95th percentile of cpu.percent over every sample
  of every node, idle ones included.
- ``days``: per simulated day (day ``d`` covers ``[d, d + 1)`` days of
  simulated time), the figures above and the placements, rejections and
  migrations that happened in it.

Counted as they happen: ``hosts_used_peak`` (the most nodes holding at
least one instance at any moment), ``placed``, ``rejected`` (NoValidHost),
``migrations`` (carried out), and ``herd_max``: the most placements one
node received between two of its own reports, i.e. decided on the same
reported metrics.
"""

import dataclasses

import numpy as np

#: Simulated seconds per day of ``days``.
DAY = 86400.0
#: The percentile of ``p95_host_cpu``.
PERCENTILE = 95.0
#: What each day of ``days`` counts.
DAY_COUNTS = ("placed", "rejected", "migrations", "hot_host_minutes",
              "vm_hot_minutes", "overload_core_minutes")


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
    vm_hot_minutes: float = 0.0
    overload_core_minutes: float = 0.0
    #: The simulated day now (set by the runner as time advances).
    day: int = 0
    #: Samples taken and the sum of their standard deviations.
    samples: int = 0
    stddev_sum: float = 0.0
    #: Placements per node since its last report.
    since_report: np.ndarray = dataclasses.field(init=False)
    #: cpu.percent of every node at every sample, for the heat map.
    cpu_history: list[np.ndarray] = dataclasses.field(default_factory=list)
    #: The day of each sample of ``cpu_history``.
    sample_days: list[int] = dataclasses.field(default_factory=list)
    #: Day -> its counts (``DAY_COUNTS``).
    per_day: dict[int, dict[str, float]] = dataclasses.field(
        default_factory=dict)

    def __post_init__(self) -> None:
        self.since_report = np.zeros(self.hosts, dtype=np.int64)

    def _count(self, name: str, amount: float = 1) -> None:
        today = self.per_day.get(self.day)
        if today is None:
            today = self.per_day[self.day] = dict.fromkeys(DAY_COUNTS, 0)
        today[name] += amount

    def rejection(self) -> None:
        self.rejected += 1
        self._count("rejected")

    def migration(self) -> None:
        self.migrations += 1
        self._count("migrations")

    def placement(self, host: int) -> None:
        self.placed += 1
        self._count("placed")
        self.since_report[host] += 1
        self.herd_max = max(self.herd_max, int(self.since_report[host]))

    def reported(self, hosts: np.ndarray) -> None:
        self.since_report[hosts] = 0

    def used(self, hosts_used: int) -> None:
        self.hosts_used_peak = max(self.hosts_used_peak, hosts_used)

    def sample(self, cpu_percent: np.ndarray,
               overload_cores: np.ndarray | None = None,
               vms_on_host: np.ndarray | None = None) -> None:
        """One sample of every node: its cpu.percent, its demand beyond
        its cores (in cores) and how many VMs it holds."""
        self.samples += 1
        self.stddev_sum += float(np.std(cpu_percent))
        hot = cpu_percent >= self.hot_threshold
        minutes = self.sample_minutes
        figures = {"hot_host_minutes": minutes * int(np.count_nonzero(hot))}
        if vms_on_host is not None:
            figures["vm_hot_minutes"] = minutes * int(vms_on_host[hot].sum())
        if overload_cores is not None:
            figures["overload_core_minutes"] = minutes * float(
                overload_cores.sum())
        for name, amount in figures.items():
            setattr(self, name, getattr(self, name) + amount)
            self._count(name, amount)
        self.cpu_history.append(cpu_percent.astype(np.float32))
        self.sample_days.append(self.day)

    @property
    def cpu_stddev_mean(self) -> float:
        return self.stddev_sum / self.samples if self.samples else 0.0

    def _p95(self, samples: list[np.ndarray]) -> float:
        if not samples:
            return 0.0
        return round(float(np.percentile(np.concatenate(samples),
                                         PERCENTILE)), 3)

    def days(self) -> list[dict]:
        """Per simulated day, in order: its counts and ``p95_host_cpu``
        (over that day's samples)."""
        by_day: dict[int, list[np.ndarray]] = {}
        for day, sample in zip(self.sample_days, self.cpu_history,
                               strict=True):
            by_day.setdefault(day, []).append(sample)
        return [{"day": day, **{name: round(value, 3) for name, value
                                in self.per_day.get(day, dict.fromkeys(
                                    DAY_COUNTS, 0)).items()},
                 "p95_host_cpu": self._p95(by_day.get(day, []))}
                for day in sorted(set(self.per_day) | set(by_day))]

    def as_dict(self) -> dict:
        return {"vms": self.vms, "placed": self.placed,
                "rejected": self.rejected,
                "hosts_used_peak": self.hosts_used_peak,
                "hot_host_minutes": round(self.hot_host_minutes, 3),
                "vm_hot_minutes": round(self.vm_hot_minutes, 3),
                "overload_core_minutes": round(self.overload_core_minutes,
                                               3),
                "p95_host_cpu": self._p95(self.cpu_history),
                "hot_threshold": self.hot_threshold,
                "cpu_stddev_mean": round(self.cpu_stddev_mean, 3),
                "herd_max": self.herd_max, "migrations": self.migrations,
                "days": self.days()}
