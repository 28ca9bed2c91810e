"""Per-VM CPU readings (``simulate --cpu-readings``) in place of the model.

A readings file has the Azure Public Dataset V1 ``vm_cpu_readings``
layout, no header: ``timestamp, vmid, mincpu, maxcpu, avgcpu``; seconds
on the trace's ``vmcreated`` clock (shifted with it:
``trace.Workload.start`` is subtracted), a reading every 300 s, CPU in
percent of the VM's cores. One header line at the top of a file (a first
field that is not a number) is tolerated.

A VM with readings runs, in each 5-minute slot, at the ``avgcpu`` of its
latest reading stamped before the slot ends; it keeps that reading across
gaps and follows ``cpu_model`` only before its first reading or when it has
none. Files are read as simulated time advances (several files are merged
by time), so memory is bounded by the trace's VMs, not by the files' size.

Lines that cannot be used are skipped and counted, never fatal:
malformed lines (reported as trace lines are), lines stamped earlier than
a line before them in the same file (the dataset's files are in time
order; a line out of order would otherwise change the past), and readings
of VMs the trace does not hold.
"""

import csv
import dataclasses
import heapq
import math
from collections.abc import Iterator
from collections.abc import Sequence

import numpy as np

from scheduler.simulation import cpu_model
from scheduler.simulation import trace

COLUMNS = ("timestamp", "vmid", "mincpu", "maxcpu", "avgcpu")
#: Problem lines kept to be shown one by one; the rest are only counted.
SHOWN = 20


class ReadingsError(Exception):
    """A readings file cannot be used at all (not one bad line)."""


@dataclasses.dataclass
class Counts:
    """What became of the readings lines read so far."""

    used: int = 0
    unknown_vm: int = 0
    malformed: int = 0
    out_of_order: int = 0
    #: The first ``SHOWN`` skipped lines: (file, line number, reason).
    problems: list[tuple[str, int, str]] = dataclasses.field(
        default_factory=list)

    def skip(self, path: str, number: int, reason: str) -> None:
        if len(self.problems) < SHOWN:
            self.problems.append((path, number, reason))

    def as_dict(self) -> dict:
        """The counts as the run's JSON carries them."""
        return {"readings_used": self.used,
                "readings_unknown_vm": self.unknown_vm,
                "readings_skipped": self.malformed + self.out_of_order,
                "readings_malformed": self.malformed,
                "readings_out_of_order": self.out_of_order}


def _parse(row: list[str]) -> tuple[float, str, float]:
    if len(row) != len(COLUMNS):
        raise ValueError(f"{len(row)} columns, expected {len(COLUMNS)}")
    try:
        values = [float(row[i]) for i in (0, 2, 3, 4)]
    except ValueError as e:
        raise ValueError(f"not a number ({e})") from None
    if not all(math.isfinite(v) for v in values):
        raise ValueError("not a finite number")
    if not 0.0 <= values[3] <= 100.0:
        raise ValueError(f"avgcpu {row[4].strip()} is not within 0..100")
    return values[0], row[1].strip(), values[3]


def check_files(paths: Sequence[str]) -> None:
    """Raise ReadingsError naming the first file that cannot be opened."""
    for path in paths:
        try:
            with open(path, "rb"):
                pass
        except OSError as e:
            raise ReadingsError(f"cannot read readings {path}: "
                                f"{e.strerror or e}") from e


def _rows(rows) -> Iterator[tuple[list[str] | None, str]]:
    """(row, "") for each row of a csv reader, or (None, why) for a line
    the reader refused (a field over its size limit): it goes on with
    the next line."""
    while True:
        try:
            yield next(rows), ""
        except StopIteration:
            return
        except csv.Error as e:
            yield None, str(e)


def _lines(path: str, vm_of: dict[str, int], start: float,
           counts: Counts) -> Iterator[tuple[float, int, float]]:
    """(simulated time, VM index, avgcpu) of the usable lines of
    ``path``, in the file's order."""
    latest = -math.inf
    try:
        with open(path, newline="", encoding="utf-8",
                  errors="replace") as stream:
            rows = csv.reader(stream)
            for row, refused in _rows(rows):
                if row is not None and (
                        not row or (len(row) == 1 and not row[0].strip())):
                    continue
                try:
                    if row is None:
                        raise ValueError(refused)
                    stamp, vmid, avgcpu = _parse(row)
                except ValueError as e:
                    if (rows.line_num == 1 and row
                            and row[0].strip().isalpha()):
                        continue  # a header line
                    counts.malformed += 1
                    counts.skip(path, rows.line_num, str(e))
                    continue
                if stamp < latest:
                    counts.out_of_order += 1
                    counts.skip(path, rows.line_num,
                                f"timestamp {row[0].strip()} before an "
                                "earlier line's")
                    continue
                latest = stamp
                vm = vm_of.get(vmid)
                if vm is None:
                    counts.unknown_vm += 1
                    continue
                yield stamp - start, vm, avgcpu
    except OSError as e:
        raise ReadingsError(f"cannot read readings {path}: {e}") from e


class ReadingsStream:
    """The readings of ``paths`` for the VMs of ``workload``, handed out
    in time order as simulated time advances."""

    def __init__(self, paths: Sequence[str], workload: trace.Workload):
        if workload.vmid is None:
            raise ReadingsError("--cpu-readings needs a trace (--trace): "
                                "readings join it by vmid")
        vm_of = {vmid: index for index, vmid in enumerate(workload.vmid)}
        self.counts = Counts()
        self._merged = heapq.merge(
            *(_lines(path, vm_of, workload.start, self.counts)
              for path in paths), key=lambda reading: reading[0])
        self._next: tuple[float, int, float] | None = None

    def until(self, seconds: float) -> Iterator[tuple[int, float]]:
        """(VM index, avgcpu) of the readings stamped before ``seconds``
        not handed out yet, oldest first."""
        while True:
            if self._next is None:
                self._next = next(self._merged, None)
                if self._next is None:
                    return
            if self._next[0] >= seconds:
                return
            _, vm, avgcpu = self._next
            self._next = None
            self.counts.used += 1
            yield vm, avgcpu


class Overlay:
    """Every VM's utilisation per slot: its readings where it has any,
    the CPU model (``cpu_model.CpuModel``) elsewhere. The model runs for
    every VM anyway, so a run with readings of some VMs leaves the
    others' load as it was without any."""

    def __init__(self, workload: trace.Workload, seed: int,
                 paths: Sequence[str] = ()):
        self.model = cpu_model.CpuModel(workload, seed)
        self.stream = ReadingsStream(paths, workload) if paths else None
        self.last = np.full(len(workload), np.nan)

    def utilisation(self, slot: int) -> np.ndarray:
        """Percent of own cores of every VM during ``slot``; slots are
        asked for in increasing order."""
        modelled = self.model.utilisation(slot)
        if self.stream is None:
            return modelled
        for vm, avgcpu in self.stream.until((slot + 1) * cpu_model.SLOT):
            self.last[vm] = avgcpu
        return np.where(np.isnan(self.last), modelled, self.last)

    def counts(self) -> Counts | None:
        return None if self.stream is None else self.stream.counts


def series(workload: trace.Workload, seed: int, paths: Sequence[str],
           slots: int) -> tuple[np.ndarray, Counts | None]:
    """Every VM's utilisation over slots 0..``slots``-1 (VMs x slots,
    float32: what ``--oracle`` knows in advance), and the readings'
    counts."""
    overlay = Overlay(workload, seed, paths)
    matrix = np.empty((len(workload), slots), dtype=np.float32)
    for slot in range(slots):
        matrix[:, slot] = overlay.utilisation(slot)
    return matrix, overlay.counts()


class Precomputed:
    """A utilisation source replaying a ``series`` matrix (slots past its
    end keep its last column)."""

    def __init__(self, matrix: np.ndarray, counts: Counts | None = None):
        self.matrix = matrix
        self._counts = counts

    def utilisation(self, slot: int) -> np.ndarray:
        return self.matrix[:, min(slot, self.matrix.shape[1] - 1)].astype(
            float)

    def counts(self) -> Counts | None:
        return self._counts
