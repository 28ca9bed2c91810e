"""The time the engine reads.

Every part of the decision path (metric ages, pending claims, claim and
change stamps, balancer windows and spacing) asks this module for the
time through ``utcnow``; so does the database layer's ``models.utcnow``,
the default of its timestamp columns. A service reads the wall clock;
``scheduler-manage simulate`` runs the same engine on simulated time by
installing a ``SimulatedClock`` with ``simulated()``, so that staleness,
pending claims and herding behave as they would over days of real time.

The wall clock is oslo.utils' ``timeutils.utcnow``; the simulated one is
our own, since timeutils' time override is deprecated (and warns at every
call, which a simulation makes millions of).

The host cache's maintenance timers (full reloads, late-change checks)
keep measuring real seconds: they pace the database work of one process,
which a simulation does at the same rate as a service, not the fleet's
life, which it compresses.
"""

import contextlib
import datetime
from collections.abc import Iterator

from oslo_utils import timeutils


class SimulatedClock:
    """Time that moves only when told to: ``advance_to(seconds)``;
    ``seconds`` counts from ``start`` (naive UTC)."""

    def __init__(self, start: datetime.datetime):
        self.start = start
        self.seconds = 0.0

    def advance_to(self, seconds: float) -> None:
        if seconds < self.seconds:
            raise ValueError(f"simulated time cannot go back from "
                             f"{self.seconds} s to {seconds} s")
        self.seconds = seconds

    def utcnow(self) -> datetime.datetime:
        return self.start + datetime.timedelta(seconds=self.seconds)


_simulated: SimulatedClock | None = None


def utcnow() -> datetime.datetime:
    """Naive UTC now: the simulated time while one is installed."""
    if _simulated is not None:
        return _simulated.utcnow()
    return timeutils.utcnow()


@contextlib.contextmanager
def simulated(clock: SimulatedClock) -> Iterator[SimulatedClock]:
    """Install ``clock`` for the whole process until the block ends.

    Process-wide on purpose: the engine's threads (the host cache, the
    claim store, the balancer) must all agree on the time.
    """
    global _simulated
    if _simulated is not None:
        raise RuntimeError("a simulated clock is already installed")
    _simulated = clock
    try:
        yield clock
    finally:
        _simulated = None
