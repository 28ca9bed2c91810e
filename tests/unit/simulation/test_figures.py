"""The figures of a run from samples worked out by hand."""

import numpy as np
import pytest

from scheduler.simulation import figures


def test_sample_figures_and_days():
    f = figures.Figures(hosts=3, hot_threshold=80.0, sample_minutes=2.0)
    f.placement(0)
    f.sample(np.array([100.0, 80.0, 10.0]), np.array([1.5, 0.0, 0.0]),
             np.array([3, 1, 5]))
    f.day = 1
    f.rejection()
    f.migration()
    f.sample(np.array([50.0, 90.0, 0.0]), np.zeros(3), np.array([1, 2, 0]))
    result = f.as_dict()
    assert result["hot_host_minutes"] == 2.0 * 2 + 2.0 * 1
    assert result["vm_hot_minutes"] == 2.0 * (3 + 1) + 2.0 * 2
    assert result["overload_core_minutes"] == 3.0
    assert result["p95_host_cpu"] == pytest.approx(
        np.percentile([100, 80, 10, 50, 90, 0], 95))
    first, second = result["days"]
    assert (first["day"], first["placed"], first["rejected"],
            first["hot_host_minutes"], first["vm_hot_minutes"],
            first["overload_core_minutes"]) == (0, 1, 0, 4.0, 8.0, 3.0)
    assert (second["day"], second["rejected"], second["migrations"],
            second["hot_host_minutes"]) == (1, 1, 1, 2.0)
    assert second["p95_host_cpu"] == pytest.approx(
        np.percentile([50, 90, 0], 95))


def test_no_samples():
    result = figures.Figures(hosts=1, hot_threshold=80.0,
                             sample_minutes=1.0).as_dict()
    assert result["p95_host_cpu"] == 0.0 and result["days"] == []
