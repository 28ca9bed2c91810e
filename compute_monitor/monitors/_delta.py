"""Baseline bookkeeping shared by the monitors that report rates."""

import time
from collections.abc import Callable
from typing import Generic
from typing import TypeVar

T = TypeVar("T")

#: Shortest window a rate is computed over. Counters tick coarsely
#: (cpu_times in 10 ms jiffies), so a window of a few milliseconds, as on
#: the first cycle right after start-up, would give mostly noise.
MIN_WINDOW = 0.25


class DeltaSampler(Generic[T]):
    """Keeps the previous reading of a cumulative counter source.

    The first reading is taken on construction so that the agent's first
    cycle already has a baseline; each ``sample()`` then returns the
    previous and the new reading and makes the new one the baseline.
    """

    def __init__(self, read: Callable[[], T],
                 min_window: float = MIN_WINDOW) -> None:
        self._read = read
        self._min_window = min_window
        self._previous = read()
        self._previous_at = time.monotonic()

    def sample(self) -> tuple[T, T, float]:
        """Return ``(previous, current, elapsed_seconds)``.

        Sleeps first if less than ``min_window`` passed since the previous
        reading.
        """
        remaining = self._min_window - (time.monotonic() - self._previous_at)
        if remaining > 0:
            time.sleep(remaining)
        current = self._read()
        now = time.monotonic()
        previous, elapsed = self._previous, now - self._previous_at
        self._previous, self._previous_at = current, now
        return previous, current, elapsed


def increase(previous: float, current: float) -> float:
    """How much a cumulative counter grew; never negative.

    Counters go backwards when a device is reset or replaced (and Linux's
    iowait can step back); a negative rate would be meaningless.
    """
    return max(current - previous, 0)
