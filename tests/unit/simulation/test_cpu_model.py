"""The per-VM utilisation model."""

import numpy as np
import pytest

from scheduler.simulation import cpu_model
from scheduler.simulation import trace


def _workload(vms: int, avg: float, p95: float, peak: float,
              interactive: bool = False) -> trace.Workload:
    return trace.Workload(
        created=np.zeros(vms), deleted=np.full(vms, 1e9),
        maxcpu=np.full(vms, peak), avgcpu=np.full(vms, avg),
        p95maxcpu=np.full(vms, p95), cores=np.ones(vms, dtype=np.int64),
        memory_mb=np.full(vms, 1024), interactive=np.full(vms, interactive))


def test_sigma_puts_the_95th_percentile_at_p95maxcpu():
    sigma = cpu_model.burst_sigma(np.array([10.0, 10.0, 10.0, 0.0]),
                                  np.array([10.0, 25.0, 90.0, 5.0]))
    # No burst, a burst of 2.5x, and the cap of the model.
    assert sigma[0] == 0.0 and sigma[3] == 0.0
    ratio = np.exp(1.6448536 * sigma[1] - sigma[1] ** 2 / 2)
    assert ratio == pytest.approx(2.5)
    assert sigma[2] == pytest.approx(1.6448536)


def test_steady_vm_runs_at_its_average():
    model = cpu_model.CpuModel(_workload(3, 40, 40, 40), seed=1)
    assert model.utilisation(0).tolist() == [40.0] * 3
    assert model.utilisation(5).tolist() == [40.0] * 3


def test_bursty_vms_keep_mean_p95_and_cap():
    model = cpu_model.CpuModel(_workload(20000, 10, 25, 100), seed=2)
    levels = model.utilisation(0)
    assert levels.mean() == pytest.approx(10, rel=0.03)
    assert np.percentile(levels, 95) == pytest.approx(25, rel=0.03)
    capped = cpu_model.CpuModel(_workload(20000, 10, 25, 20), seed=2)
    assert capped.utilisation(0).max() == 20


def test_load_persists_and_is_reproducible():
    work = _workload(5000, 10, 30, 100)
    first, again = (cpu_model.CpuModel(work, seed=4) for _ in range(2))
    now, later = first.utilisation(0), first.utilisation(1)
    assert np.array_equal(now, again.utilisation(0))
    assert np.array_equal(later, again.utilisation(1))
    # Correlated from one slot to the next, not redrawn.
    assert np.corrcoef(np.log(now), np.log(later))[0, 1] == pytest.approx(
        cpu_model.PERSISTENCE, abs=0.03)
    with pytest.raises(ValueError):
        first.utilisation(1)


def test_interactive_vms_follow_the_day():
    model = cpu_model.CpuModel(_workload(2, 50, 50, 100, True), seed=0)
    two_am = model.utilisation(int(2 * 3600 // cpu_model.SLOT))[0]
    two_pm = model.utilisation(int(14 * 3600 // cpu_model.SLOT))[0]
    assert two_am == pytest.approx(50 * 0.6, rel=0.01)
    assert two_pm == pytest.approx(50 * 1.4, rel=0.01)
