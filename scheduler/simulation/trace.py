"""Workloads: the Azure Public Dataset ``vmtable`` layout, or synthetic.

A ``vmtable`` row is ``vmid, subscriptionid, deploymentid, vmcreated,
vmdeleted, maxcpu, avgcpu, p95maxcpu, vmcategory, vmcorecount,
vmmemory`` with no header: times in seconds, CPU in percent of the VM's
cores, memory in GB. The dataset's V2 release gives core counts and
memory as buckets (``>24``, ``>64``); a bucket is read as its lower bound.

``synthetic()`` draws a workload shaped like that dataset; the shapes and
where they come from are in docs/simulator.md.
"""

import csv
import dataclasses
import math
from collections.abc import Iterator

import numpy as np

#: Columns of a vmtable row.
COLUMNS = ("vmid", "subscriptionid", "deploymentid", "vmcreated",
           "vmdeleted", "maxcpu", "avgcpu", "p95maxcpu", "vmcategory",
           "vmcorecount", "vmmemory")

DAY = 86400.0


class TraceError(Exception):
    """The trace cannot be read at all (not one malformed line)."""


@dataclasses.dataclass
class Workload:
    """The VMs to replay, one array element per VM, sorted by creation.

    Times are seconds from the start of the simulation; CPU figures are
    percent of the VM's own cores.
    """

    created: np.ndarray
    deleted: np.ndarray
    maxcpu: np.ndarray
    avgcpu: np.ndarray
    p95maxcpu: np.ndarray
    cores: np.ndarray
    memory_mb: np.ndarray
    interactive: np.ndarray
    #: Malformed lines skipped when reading: (line number, reason).
    skipped: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    #: The trace's ``vmid`` of each VM (object array; None for a
    #: synthetic workload): what ``--cpu-readings`` lines join on.
    vmid: np.ndarray | None = None
    #: The trace time (its ``vmcreated`` clock) of simulated second 0:
    #: every time read from the trace, readings included, is shifted by
    #: it.
    start: float = 0.0

    def __len__(self) -> int:
        return len(self.created)

    @property
    def span(self) -> float:
        """Seconds from the start of the simulation to the last creation:
        the default duration of a simulation."""
        return float(self.created[-1]) if len(self) else 0.0

    def truncated(self, vms: int) -> "Workload":
        """The first ``vms`` VMs."""
        return dataclasses.replace(self, **{
            f.name: getattr(self, f.name)[:vms]
            for f in dataclasses.fields(self)
            if isinstance(getattr(self, f.name), np.ndarray)})


def _bucket(text: str) -> float:
    """``>24`` is read as 24; anything else must be a number."""
    text = text.strip()
    return float(text[1:] if text.startswith(">") else text)


def _parse_row(row: list[str]) -> tuple:
    if len(row) != len(COLUMNS):
        raise ValueError(f"{len(row)} columns, expected {len(COLUMNS)}")
    try:
        created, deleted, maxcpu, avgcpu, p95 = (
            float(row[i]) for i in range(3, 8))
        cores, memory_gb = _bucket(row[9]), _bucket(row[10])
    except ValueError as e:
        raise ValueError(f"not a number ({e})") from None
    values = (created, deleted, maxcpu, avgcpu, p95, cores, memory_gb)
    if not all(math.isfinite(v) for v in values):
        raise ValueError("not a finite number")
    if deleted < created:
        raise ValueError(f"negative lifetime (vmdeleted {row[4]} before "
                         f"vmcreated {row[3]})")
    if min(maxcpu, avgcpu, p95) < 0 or max(maxcpu, avgcpu, p95) > 100:
        raise ValueError("CPU figures must lie within 0..100")
    if cores < 1 or memory_gb <= 0:
        raise ValueError(f"vmcorecount {row[9]!r} or vmmemory {row[10]!r} "
                         "is not positive")
    return (created, deleted, maxcpu, avgcpu, p95, int(cores),
            int(memory_gb * 1024), row[8].strip() == "Interactive",
            row[0].strip())


def read_vmtable(path: str) -> Workload:
    """Read a vmtable CSV. Malformed lines are skipped and listed in
    ``Workload.skipped``; raises TraceError when the file cannot be read
    or holds no usable line."""
    try:
        # A byte that is not UTF-8 spoils its field, not the file: the
        # line is then skipped if that field had to be a number.
        with open(path, newline="", encoding="utf-8",
                  errors="replace") as stream:
            return _from_lines(csv.reader(stream), path)
    except (OSError, csv.Error) as e:
        raise TraceError(f"cannot read trace {path}: {e}") from e


def _from_lines(rows: Iterator[list[str]], path: str) -> Workload:
    parsed, skipped = [], []
    for row in rows:
        # The file's line number (a quoted field may span lines).
        number = getattr(rows, "line_num", len(parsed) + len(skipped) + 1)
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        try:
            parsed.append(_parse_row(row))
        except ValueError as e:
            skipped.append((number, str(e)))
    if not parsed:
        raise TraceError(f"trace {path} holds no usable line "
                         f"({len(skipped)} malformed)")
    parsed.sort(key=lambda vm: vm[0])
    columns = list(zip(*parsed, strict=True))
    start = columns[0][0]
    return Workload(
        created=np.array(columns[0]) - start,
        deleted=np.array(columns[1]) - start,
        maxcpu=np.array(columns[2]), avgcpu=np.array(columns[3]),
        p95maxcpu=np.array(columns[4]),
        cores=np.array(columns[5], dtype=np.int64),
        memory_mb=np.array(columns[6], dtype=np.int64),
        interactive=np.array(columns[7], dtype=bool), skipped=skipped,
        vmid=np.array(columns[8], dtype=object), start=start)


# Synthetic workloads. Each shape is a (values, probabilities) pair or a
# distribution's parameters; docs/simulator.md gives their sources.
CORES = ((1, 2, 4, 8, 24), (0.25, 0.45, 0.17, 0.10, 0.03))
MEMORY_GB_PER_CORE = ((2, 4, 8), (0.35, 0.50, 0.15))
#: Lifetime classes of VMs created during the trace: (share, median
#: seconds) of a log-normal with sigma 1.
LIFETIMES = ((0.40, 15 * 60), (0.40, 3 * 3600), (0.20, 2 * DAY))
#: Share of VMs already running when the trace starts (created within its
#: first ten minutes, living a median of three days).
RUNNING_AT_START = 0.3
INTERACTIVE_SHARE = 0.3
#: avgcpu ~ 100 * Beta(a, b): most VMs are mostly idle.
AVGCPU_BETA = (0.7, 3.0)
#: p95maxcpu / avgcpu ~ log-normal(median, sigma).
BURST_RATIO = (2.5, 0.5)


def synthetic(vms: int, seed: int, duration: float = DAY) -> Workload:
    """``vms`` VMs arriving over ``duration`` seconds, drawn with
    ``seed``."""
    rng = np.random.default_rng(seed)
    running = int(round(vms * RUNNING_AT_START))
    arriving = vms - running
    created = np.concatenate([
        rng.uniform(0, 600, running),
        _diurnal_arrivals(rng, arriving, duration)])
    shares, medians = zip(*LIFETIMES, strict=True)
    kind = rng.choice(len(LIFETIMES), size=arriving, p=shares)
    median = np.concatenate([np.full(running, 3 * DAY),
                             np.array(medians)[kind]])
    lifetime = np.maximum(median * rng.lognormal(0.0, 1.0, vms), 60.0)
    cores = rng.choice(CORES[0], size=vms, p=CORES[1])
    per_core = rng.choice(MEMORY_GB_PER_CORE[0], size=vms,
                          p=MEMORY_GB_PER_CORE[1])
    avgcpu = 100.0 * rng.beta(*AVGCPU_BETA, size=vms)
    p95 = np.minimum(100.0, avgcpu * np.maximum(
        1.0, rng.lognormal(math.log(BURST_RATIO[0]), BURST_RATIO[1], vms)))
    maxcpu = np.minimum(100.0, p95 * rng.uniform(1.0, 1.6, vms))
    order = np.argsort(created, kind="stable")
    return Workload(
        created=created[order], deleted=(created + lifetime)[order],
        maxcpu=maxcpu[order], avgcpu=avgcpu[order], p95maxcpu=p95[order],
        cores=cores[order].astype(np.int64),
        memory_mb=(cores * per_core * 1024)[order].astype(np.int64),
        interactive=(rng.random(vms) < INTERACTIVE_SHARE)[order])


def _diurnal_arrivals(rng: np.random.Generator, count: int,
                      duration: float) -> np.ndarray:
    """``count`` arrival times over ``duration``, more by day than by
    night (rate 1 + 0.3 sin, peak at 14:00), by thinning."""
    times: list[np.ndarray] = []
    found = 0
    while found < count:
        batch = rng.uniform(0, duration, 2 * (count - found) + 16)
        keep = rng.random(len(batch)) < (1 + 0.3 * day_wave(batch)) / 1.3
        times.append(batch[keep])
        found += int(keep.sum())
    return np.concatenate(times)[:count]


def day_wave(seconds: np.ndarray) -> np.ndarray:
    """-1 at 02:00, +1 at 14:00 of each simulated day."""
    return np.sin(2 * np.pi * (seconds - 8 * 3600) / DAY)
