"""Utilisation history: the successive cpu.percent reports of each node.

Balancers judge a host over- or under-utilised from how its cpu.percent
behaved over the last N minutes, never from one report. The reports are
kept in the ``utilization_samples`` table, so that every scheduler
worker and a one-shot ``scheduler-manage balance`` judge from the same
history: each balancing tick appends, for every node whose cpu.percent
is newer than its latest sample, one sample stamped with the metric's own
timestamp, and deletes the samples no window needs any more (the
statements are in ``scheduler.db.sample_sql``).

The rule: a node *stayed at or above X for N minutes* when its samples
reach back at least N minutes from its newest one, and every sample of
that window is >= X. The window is the newest sample at or before
``newest - N`` (the report in force when the window opened) and every
later sample. *Stayed below X* is the same with < X.
"""

import bisect
import dataclasses
import datetime
import itertools
import statistics
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence

import sqlalchemy as sa
from oslo_config import cfg

from scheduler.db import api as db_api
from scheduler.db import sample_sql
from scheduler.hosts import state as hm

CPU_PERCENT = "cpu.percent"


@dataclasses.dataclass(frozen=True, slots=True)
class Sample:
    """One cpu.percent report of a node."""

    reported_at: datetime.datetime
    cpu_percent: float
    instances: int


def window_start(samples: Sequence[Sample], minutes: float) -> int | None:
    """Index in ``samples`` (oldest first) of the first sample of the
    last ``minutes`` minutes: the newest one at or before
    ``newest - minutes``. None when the samples do not reach that far."""
    if not samples:
        return None
    opened = samples[-1].reported_at - datetime.timedelta(minutes=minutes)
    # Bisected: a long window (RecurrenceWindowMinutes) holds hundreds of
    # samples a node, and every window of every balancer starts here.
    index = bisect.bisect_right(samples, opened, key=_reported_at) - 1
    return None if index < 0 else index


class UtilizationHistory:
    """The samples of each node, oldest first, and the rule over them."""

    def __init__(self, samples: Mapping[int, Sequence[Sample]]):
        self._samples = {node_id: sorted(rows, key=_reported_at)
                         for node_id, rows in samples.items()}

    def samples(self, node_id: int) -> list[Sample]:
        return list(self._samples.get(node_id, ()))

    def stayed_at_least(self, node_id: int, percent: float,
                        minutes: float) -> bool:
        """True when cpu.percent stayed >= ``percent`` for ``minutes``
        (see the module's rule)."""
        return self._stayed(node_id, minutes,
                            lambda value: value >= percent)

    def stayed_below(self, node_id: int, percent: float,
                     minutes: float) -> bool:
        """True when cpu.percent stayed < ``percent`` for ``minutes``."""
        return self._stayed(node_id, minutes, lambda value: value < percent)

    def mean_over(self, node_id: int, minutes: float) -> float | None:
        """Mean cpu.percent of the samples of the last ``minutes``
        minutes (the window of the module's rule, its opening sample
        included); over every sample when they do not reach that far
        back (``covers`` tells which); None without samples.

        Reports come at the node's fixed reporting interval, so each
        sample stands for the same length of time: a plain mean.
        """
        samples = self._samples.get(node_id, [])
        if not samples:
            return None
        window = samples[window_start(samples, minutes) or 0:]
        return sum(sample.cpu_percent for sample in window) / len(window)

    def minutes_at_least(self, node_id: int, percent: float,
                         minutes: float) -> float:
        """Minutes of the last ``minutes`` minutes at cpu.percent >=
        ``percent``, in a row or not: each sample stands for the time to
        the next one (the newest for none), counted from the window's
        opening and at most the window's typical spacing of reports (a
        hot sample before a gap in reporting is not hot for all of it)."""
        samples = self._samples.get(node_id, [])
        start = window_start(samples, minutes) or 0
        window = samples[start:]
        if len(window) < 2:
            return 0.0
        opened = window[-1].reported_at - datetime.timedelta(minutes=minutes)
        spans = [(later.reported_at - max(sample.reported_at, opened))
                 .total_seconds()
                 for sample, later in itertools.pairwise(window)]
        typical = statistics.median(spans)
        return sum(min(span, typical)
                   for span, sample in zip(spans, window, strict=False)
                   if sample.cpu_percent >= percent) / 60.0

    def covers(self, node_id: int, minutes: float) -> bool:
        """True when the samples reach back ``minutes`` from the newest."""
        return window_start(self._samples.get(node_id, []),
                            minutes) is not None

    def latest(self, node_id: int) -> Sample | None:
        """The newest sample, None without samples."""
        samples = self._samples.get(node_id)
        return samples[-1] if samples else None

    def _stayed(self, node_id: int, minutes: float,
                holds: Callable[[float], bool]) -> bool:
        samples = self._samples.get(node_id, [])
        start = window_start(samples, minutes)
        return start is not None and all(
            holds(sample.cpu_percent) for sample in samples[start:])


def _reported_at(sample: Sample) -> datetime.datetime:
    return sample.reported_at


class SampleStore:
    """``utilization_samples`` in the database of ``[database]
    connection``; shared by every process balancing the same fleet.

    The store keeps the samples it read and reads only the rows added
    since (by any process) at each tick, and all of them every
    ``FULL_READ_TICKS`` ticks: a row another process committed late,
    under an id below the newest one read, is seen by the next full read
    (the samples it would have added are the reports this process missed
    between two of its ticks).
    """

    #: Ticks between two reads of every sample.
    FULL_READ_TICKS = 10

    def __init__(self, conf: cfg.ConfigOpts):
        self.conf = conf
        self._by_node: dict[int, list[tuple[int | None, Sample]]] = {}
        #: The newest row id read; None: read everything next time.
        self._newest_id: int | None = None
        self._ticks = 0

    def record(self, hosts: Iterable[hm.HostState],
               keep_minutes: float) -> UtilizationHistory:
        """Append the new cpu.percent reports of ``hosts``, delete the
        samples that no window of ``keep_minutes`` or less needs, and
        return the history of every node.

        Two processes recording the same report insert it once (the
        unique (node_id, reported_at)).
        """
        engine = db_api.get_engine(self.conf)
        with engine.connect() as connection:
            by_node = self._read(connection)
        new_rows = []
        for host in hosts:
            metric = host.metrics.get(CPU_PERCENT)
            known = by_node.get(host.node_id)
            if metric is None or (known and known[-1][1].reported_at
                                  >= metric.timestamp):
                continue
            sample = Sample(metric.timestamp, metric.value,
                            len(host.instances))
            by_node.setdefault(host.node_id, []).append((None, sample))
            new_rows.append({"node_id": host.node_id,
                             "reported_at": sample.reported_at,
                             "cpu_percent": sample.cpu_percent,
                             "instances": sample.instances})
        expired = [row_id for rows in by_node.values()
                   for row_id in _expired(rows, keep_minutes)]
        try:
            with engine.begin() as connection:
                if new_rows:
                    sample_sql.insert_new(connection, new_rows)
                sample_sql.delete(connection, expired)
        except BaseException:
            # What is kept may now differ from the table: read it whole.
            self._newest_id = None
            raise
        return UtilizationHistory({
            node_id: [sample for _, sample in rows]
            for node_id, rows in by_node.items()})

    def _read(self, connection: sa.Connection
              ) -> dict[int, list[tuple[int | None, Sample]]]:
        """(row id, sample) of every node, oldest first: the samples
        kept, updated with the rows added since they were read."""
        self._ticks += 1
        if self._newest_id is None or self._ticks % self.FULL_READ_TICKS == 0:
            self._by_node, self._newest_id = _read_all(connection)
            return self._by_node
        rows = sample_sql.read_after(connection, self._newest_id)
        by_node = self._by_node
        for row_id, node_id, reported_at, cpu_percent, instances in rows:
            self._newest_id = max(self._newest_id, row_id)
            kept = by_node.setdefault(node_id, [])
            sample = Sample(reported_at, cpu_percent, instances)
            _merge(kept, row_id, sample)
        return by_node


def _read_all(connection: sa.Connection
              ) -> tuple[dict[int, list[tuple[int | None, Sample]]], int]:
    """(row id, sample) of every node, oldest first, and the newest row
    id (0 for none)."""
    rows = sample_sql.read_all(connection)
    by_node: dict[int, list[tuple[int | None, Sample]]] = {}
    newest = 0
    for row_id, node_id, reported_at, cpu_percent, instances in rows:
        newest = max(newest, row_id)
        by_node.setdefault(node_id, []).append(
            (row_id, Sample(reported_at, cpu_percent, instances)))
    return by_node, newest


def _merge(kept: list[tuple[int | None, Sample]], row_id: int,
           sample: Sample) -> None:
    """Put a sample read from the table into a node's samples (oldest
    first): the one this process inserted gets its row id; another
    process's goes where its time puts it."""
    for index in range(len(kept) - 1, -1, -1):
        known_id, known = kept[index]
        if known.reported_at == sample.reported_at:
            if known_id is None:
                kept[index] = (row_id, known)
            return
        if known.reported_at < sample.reported_at:
            kept.insert(index + 1, (row_id, sample))
            return
    kept.insert(0, (row_id, sample))


def _expired(rows: list[tuple[int | None, Sample]],
             keep_minutes: float) -> list[int]:
    """Row ids of the samples older than the window of ``keep_minutes``
    (which keeps its opening sample); the rows are removed from
    ``rows``."""
    start = window_start([sample for _, sample in rows], keep_minutes)
    if not start:
        return []
    expired = [row_id for row_id, _ in rows[:start] if row_id is not None]
    del rows[:start]
    return expired

