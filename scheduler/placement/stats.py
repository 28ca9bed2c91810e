"""What a SchedulerManager did since it started: ``ManagerStats``.

The placement layer counts into it (claims, conflicts, rollbacks...) and
the manager façade reads it; each count also moves the Prometheus
counter that ``observability.MANAGER_COUNTERS`` names for it.
"""

import dataclasses
import threading

from scheduler.common import observability


@dataclasses.dataclass
class ManagerStats:
    """What a SchedulerManager did since it started (logs, tests,
    benchmarks). Read with ``as_dict()``.

    Every count also moves the Prometheus counter of the process that
    ``observability.MANAGER_COUNTERS`` names for it.
    """

    #: select_destinations calls that passed validation.
    requests: int = 0
    #: Claims made (one per placed instance).
    claims: int = 0
    #: Instances answered with the claim they already held.
    idempotent: int = 0
    #: Claims refused by the database because a concurrent scheduler
    #: filled the node first (the next candidate was tried).
    conflicts: int = 0
    #: Decisions made again after every candidate of one was taken.
    redecisions: int = 0
    #: Requests answered with NoValidHost.
    no_valid_host: int = 0
    #: Claims released because a later instance of their request failed.
    rolled_back: int = 0
    #: Waits for pending claims (``pending_retry_timeout``).
    pending_waits: int = 0
    _lock: threading.Lock = dataclasses.field(
        default_factory=threading.Lock, repr=False, compare=False)
    _exported: dict = dataclasses.field(
        default_factory=lambda: observability.metrics().manager_counters,
        repr=False, compare=False)

    def add(self, **counts: int) -> None:
        """Add ``counts`` (field name -> increment) in one step."""
        with self._lock:
            for name, count in counts.items():
                setattr(self, name, getattr(self, name) + count)
        for name, count in counts.items():
            counter = self._exported.get(name)
            if counter is not None:
                counter.inc(count)

    def as_dict(self) -> dict[str, int]:
        """Every count by field name, read together."""
        with self._lock:
            return {f.name: getattr(self, f.name)
                    for f in dataclasses.fields(self)
                    if not f.name.startswith("_")}
