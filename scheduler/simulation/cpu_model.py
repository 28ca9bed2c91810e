"""How busy each VM is over its life, from its trace row.

The dataset gives three figures per VM: ``avgcpu`` (its mean), ``p95maxcpu``
(the 95th percentile of its 5-minute maxima) and ``maxcpu`` (its peak).
The model keeps the dataset's 5-minute granularity: in slot ``k`` a VM
runs at

    u = min(maxcpu, avgcpu * day(t) * exp(sigma * z - sigma**2 / 2))

percent of its cores. ``z`` is a standard normal that persists from slot
to slot (an AR(1) process, ``z[k] = 0.9 z[k-1] + sqrt(1 - 0.81) e[k]``):
a busy VM tends to stay busy for the next half hour or so, as real VMs
do, so a node's reported load says something about its near future.
The innovations ``e[k]`` are drawn from ``(seed, k)`` for every VM of the
workload, placed or not, so every configuration compared on one seed sees
the very same load. The log-normal factor has mean 1, so the VM's mean stays
``avgcpu``; ``sigma`` is chosen so that its 95th percentile is
``p95maxcpu`` (``exp(1.645 sigma - sigma**2 / 2) = p95maxcpu / avgcpu``,
the smaller root; at most 1.645, which bursts up to 3.9 times the mean).
``day(t)`` is ``1 + 0.4 sin`` peaking at 14:00 for VMs of the
``Interactive`` category and 1 for the others. The cap at ``maxcpu``
lowers the mean a little for the burstiest VMs.
"""

import numpy as np

from scheduler.simulation import trace

#: Seconds per utilisation reading, as in the dataset.
SLOT = 300.0
#: Correlation of a VM's load level from one slot to the next.
PERSISTENCE = 0.9
_Z95 = 1.6448536269514722
_DAY_AMPLITUDE = 0.4


def burst_sigma(avgcpu: np.ndarray, p95maxcpu: np.ndarray) -> np.ndarray:
    """The log-normal sigma that puts the 95th percentile at p95maxcpu."""
    avgcpu = np.asarray(avgcpu, dtype=float)
    ratio = np.divide(p95maxcpu, avgcpu, out=np.ones_like(avgcpu),
                      where=avgcpu > 0)
    log_ratio = np.log(np.maximum(ratio, 1.0))
    return _Z95 - np.sqrt(np.maximum(_Z95 ** 2 - 2.0 * log_ratio, 0.0))


class CpuModel:
    """Utilisation (percent of own cores) of every VM of a workload."""

    def __init__(self, workload: trace.Workload, seed: int):
        self.workload = workload
        self.seed = seed
        self.sigma = burst_sigma(workload.avgcpu, workload.p95maxcpu)
        self._slot = -1
        self._z = np.zeros(len(workload))

    @staticmethod
    def slot(seconds: float) -> int:
        return int(seconds // SLOT)

    def _innovation(self, slot: int) -> np.ndarray:
        return np.random.default_rng([self.seed, slot]).standard_normal(
            len(self.workload))

    def utilisation(self, slot: int) -> np.ndarray:
        """Every VM's utilisation during ``slot``, VM order. Slots are
        asked for in increasing order (a later one may skip some)."""
        if slot <= self._slot:
            raise ValueError(f"slot {slot} after slot {self._slot}")
        if self._slot < 0:
            self._z = self._innovation(slot)
        else:
            keep = PERSISTENCE ** (slot - self._slot)
            self._z = keep * self._z + np.sqrt(1 - keep ** 2) * \
                self._innovation(slot)
        self._slot = slot
        z = self._z
        work = self.workload
        level = work.avgcpu * np.exp(self.sigma * z - self.sigma ** 2 / 2)
        middle = (slot + 0.5) * SLOT
        day = 1.0 + _DAY_AMPLITUDE * float(trace.day_wave(
            np.array([middle]))[0])
        level = np.where(work.interactive, level * day, level)
        return np.clip(level, 0.0, work.maxcpu)
