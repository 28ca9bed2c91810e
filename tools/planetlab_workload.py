#!/usr/bin/env python3
"""Workloads with real per-VM utilisation for ``simulate --cpu-readings``.

From ``planetlab-cpu.csv.gz`` (rows ``day,vm,s0..s287``: one VM-day of
5-minute CPU percentages per row; ../shared/data/README.md) it writes,
for each draw, a directory ``OUT/draw-N/`` holding

- ``vmtable.csv`` (Azure ``vmtable`` layout): ``--vms`` VMs (500) arriving
  at uniform 5-minute-aligned times over the first simulated day and
  living to the end of the span (``--days``, 3): long-lived VMs, which
  carry most of a cloud's core-hours. The dataset gives no sizes: cores
  are drawn from 1, 2, 4, 8 (30/40/20/10 %), memory 2, 4 or 8 GiB per
  core (35/50/15 %). ``avgcpu``, ``maxcpu`` and ``p95maxcpu`` are computed
  from the VM's own readings over its life, so the CPU model sees the same
  averages;
- ``readings.csv`` (Azure ``vm_cpu_readings`` layout, in time order): a
  VM's series over simulated day ``k`` is one dataset VM-day of dataset
  day ``first + k``, slot for slot (the time of day is kept, so the
  daily cycle is real). The dataset file names no VM across days, so by
  default the days of one simulated VM come from different machines (the
  row of each VM is the same position in a seeded permutation of each
  day's rows). With ``--names DIR``, a checkout of the original
  ``beloglazov/planetlab-workload-traces`` (a folder per day, a file per
  VM, whose sorted names are the rows' order in the dataset file), every
  simulated VM is one machine throughout: a machine recorded on at least
  ``--days`` days, seeded draw, its first ``--days`` recorded days from
  dataset day ``first`` on (cyclically). That keeps what a VM's history
  says about its next days, which real placement relies on;
- ``fleet.csv``: 16-vCPU nodes, as many as put the busiest simulated
  day's peak of busy cores at ``--peak-share`` (0.6) of the fleet's
  cores, with memory per node chosen so that the VMs' memory is about
  72 % of the fleet's at peak (all VMs are alive from the end of day 1).

Draw ``N`` starts at dataset day ``(seed + N) mod days`` and permutes rows
with seed ``seed + N``: different draws use different days and VMs.

``--sample DIR`` instead writes a small example (no dataset needed):
VMs whose load is synthesised here, with persistence (an AR(1) level,
0.97 per slot) and a daily cycle, as real VMs show; no dataset row.
"""

import argparse
import gzip
import math
import os
import sys

import numpy as np

SLOT = 300
SLOTS_PER_DAY = 288
NODE_VCPUS = 16
HOST_RESERVED_MB = 4096
CORES = ((1, 2, 4, 8), (0.3, 0.4, 0.2, 0.1))
GIB_PER_CORE = ((2, 4, 8), (0.35, 0.5, 0.15))
MEMORY_SHARE = 0.72
#: Trace time of simulated second 0 (any clock works: it is shifted).
EPOCH = 1_000_000


def read_dataset(path: str) -> tuple[list[str], dict[str, np.ndarray]]:
    """The dataset's days in order and, per day, its VM-days (rows x
    288 slots, percent)."""
    by_day: dict[str, list[np.ndarray]] = {}
    with gzip.open(path, "rt") as stream:
        next(stream)
        for line in stream:
            fields = line.rstrip("\n").split(",")
            by_day.setdefault(fields[0], []).append(
                np.array(fields[2:], dtype=float))
    days = sorted(by_day)
    return days, {day: np.clip(np.vstack(by_day[day]), 0, 100)
                  for day in days}


def draw_series(days: list[str], rows: dict[str, np.ndarray], draw: int,
                seed: int, vms: int, span_days: int) -> np.ndarray:
    """Percent per VM and slot over the span (VMs x slots)."""
    first = (seed + draw) % len(days)
    rng = np.random.default_rng(seed + draw)
    parts = []
    for k in range(span_days):
        day = rows[days[(first + k) % len(days)]]
        order = rng.permutation(len(day))
        parts.append(day[order[np.arange(vms) % len(day)]])
    return np.hstack(parts)


def read_names(directory: str, days: list[str]) -> dict[str, list[str]]:
    """Per dataset day, the machine name of each of its rows: the day's
    folder of the original traces, its file names sorted."""
    return {day: sorted(os.listdir(os.path.join(directory, day)))
            for day in days}


def draw_machines(days: list[str], rows: dict[str, np.ndarray],
                  names: dict[str, list[str]], draw: int, seed: int,
                  vms: int, span_days: int) -> np.ndarray:
    """Percent per VM and slot over the span, each VM one machine: its
    first ``span_days`` recorded days from the draw's first day on."""
    first = (seed + draw) % len(days)
    order = days[first:] + days[:first]
    recorded: dict[str, list[tuple[str, int]]] = {}
    for day in order:
        for row, name in enumerate(names[day]):
            recorded.setdefault(name, []).append((day, row))
    machines = sorted(name for name, seen in recorded.items()
                      if len(seen) >= span_days)
    if len(machines) < vms:
        raise ValueError(f"{len(machines)} machines are recorded on "
                         f"{span_days} days or more; --vms {vms} needs "
                         "as many")
    rng = np.random.default_rng(seed + draw)
    chosen = rng.choice(len(machines), size=vms, replace=False)
    return np.vstack([
        np.hstack([rows[day][row]
                   for day, row in recorded[machines[m]][:span_days]])
        for m in chosen.tolist()])


def sizes(rng: np.random.Generator, vms: int) -> tuple[np.ndarray,
                                                       np.ndarray]:
    cores = rng.choice(CORES[0], size=vms, p=CORES[1])
    gib = rng.choice(GIB_PER_CORE[0], size=vms, p=GIB_PER_CORE[1])
    return cores, cores * gib


def write_draw(directory: str, series: np.ndarray, created: np.ndarray,
               cores: np.ndarray, memory_gib: np.ndarray,
               peak_share: float) -> dict:
    """The three files of one draw; what the fleet was sized on."""
    os.makedirs(directory, exist_ok=True)
    vms, slots = series.shape
    start = created // SLOT
    alive = np.arange(slots)[None, :] >= start[:, None]
    with open(os.path.join(directory, "vmtable.csv"), "w") as out:
        for vm in range(vms):
            own = series[vm, start[vm]:]
            out.write(f"vm{vm:05d},sub0,dep{vm % 50:03d},"
                      f"{EPOCH + created[vm]},{EPOCH + slots * SLOT},"
                      f"{own.max():.2f},{own.mean():.2f},"
                      f"{np.percentile(own, 95):.2f},Delay-insensitive,"
                      f"{cores[vm]},{memory_gib[vm]}\n")
    with open(os.path.join(directory, "readings.csv"), "w") as out:
        for slot in range(slots):
            for vm in np.flatnonzero(alive[:, slot]).tolist():
                value = series[vm, slot]
                out.write(f"{EPOCH + slot * SLOT},vm{vm:05d},{value:.2f},"
                          f"{value:.2f},{value:.2f}\n")
    busy = (series * alive * cores[:, None] / 100.0).sum(axis=0)
    days = math.ceil(slots / SLOTS_PER_DAY)
    peak = max(busy[d * SLOTS_PER_DAY:(d + 1) * SLOTS_PER_DAY].max()
               for d in range(days))
    nodes = max(1, math.ceil(peak / (peak_share * NODE_VCPUS)))
    memory_mb = 1024 * math.ceil(
        (memory_gib.sum() * 1024 / MEMORY_SHARE / nodes
         + HOST_RESERVED_MB) / 1024)
    with open(os.path.join(directory, "fleet.csv"), "w") as out:
        out.write(f"count,vcpus,memory_mb\n{nodes},{NODE_VCPUS},"
                  f"{memory_mb}\n")
    return {"nodes": nodes, "peak_busy_cores": round(float(peak), 1),
            "peak_share": round(float(peak / (nodes * NODE_VCPUS)), 3),
            "node_memory_mb": memory_mb}


def synthesise(rng: np.random.Generator, vms: int,
               slots: int) -> np.ndarray:
    """Readings-like series (percent): a persistent log-normal level per
    VM around a drawn mean, times a daily cycle peaking at 14:00."""
    mean = 100.0 * rng.beta(0.8, 3.0, vms)
    amplitude = rng.uniform(0.1, 0.6, vms)
    z = rng.standard_normal(vms)
    series = np.empty((vms, slots))
    for slot in range(slots):
        z = 0.97 * z + math.sqrt(1 - 0.97 ** 2) * rng.standard_normal(vms)
        hour = (slot % SLOTS_PER_DAY) / 12.0
        cycle = 1 + amplitude * math.sin(2 * math.pi * (hour - 8) / 24)
        series[:, slot] = mean * cycle * np.exp(0.6 * z - 0.18)
    return np.clip(series, 0.0, 100.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--planetlab", default=os.path.join(
        os.path.dirname(__file__), os.pardir, os.pardir, "shared", "data",
        "planetlab-cpu.csv.gz"))
    parser.add_argument("--out", default="planetlab-draws")
    parser.add_argument("--draws", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vms", type=int, default=500)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--peak-share", type=float, default=0.6)
    parser.add_argument("--names", metavar="DIR", help="a checkout of "
                        "beloglazov/planetlab-workload-traces: each "
                        "simulated VM is then one machine throughout")
    parser.add_argument("--sample", metavar="DIR", help="write the small "
                        "synthesised example into DIR instead")
    args = parser.parse_args()
    if min(args.draws, args.vms, args.days) < 1 or not (
            0 < args.peak_share <= 1):
        parser.error("--draws, --vms, --days must be >= 1 and "
                     "--peak-share within (0, 1]")
    if args.sample:
        rng = np.random.default_rng(args.seed)
        vms, slots = 24, SLOTS_PER_DAY
        created = rng.integers(0, SLOTS_PER_DAY // 2, vms) * SLOT
        cores, memory = sizes(rng, vms)
        print(write_draw(args.sample, synthesise(rng, vms, slots), created,
                         cores, memory, args.peak_share), file=sys.stderr)
        return 0
    try:
        days, rows = read_dataset(args.planetlab)
        names = read_names(args.names, days) if args.names else None
    except (OSError, ValueError, StopIteration) as e:
        print(f"planetlab_workload: cannot read {args.planetlab}: {e}",
              file=sys.stderr)
        return 2
    for draw in range(args.draws):
        rng = np.random.default_rng([args.seed, draw])
        try:
            series = (draw_machines(days, rows, names, draw, args.seed,
                                    args.vms, args.days) if names
                      else draw_series(days, rows, draw, args.seed,
                                       args.vms, args.days))
        except ValueError as e:
            print(f"planetlab_workload: {e}", file=sys.stderr)
            return 2
        created = rng.integers(0, SLOTS_PER_DAY, args.vms) * SLOT
        cores, memory = sizes(rng, args.vms)
        sized = write_draw(os.path.join(args.out, f"draw-{draw}"), series,
                           created, cores, memory, args.peak_share)
        print(f"draw {draw}: first day "
              f"{days[(args.seed + draw) % len(days)]} {sized}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
