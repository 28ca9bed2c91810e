"""TargetLoadWeigher: fill up to the target, then spread."""

import numpy as np
import pytest

from scheduler.weights.target_load import TargetLoadWeigher
from scheduler.weights.target_load import target_score
from tests.unit.weights.loads import clear_metrics_overrides
from tests.unit.weights.loads import loaded_host
from tests.unit.weights.loads import spec


@pytest.fixture(autouse=True)
def _clear_overrides(conf):
    yield
    clear_metrics_overrides(conf)


def test_score_peaks_at_the_target():
    scores = target_score(np.array([0.0, 20.0, 40.0, 70.0, 100.0, 130.0]),
                          40.0)
    assert scores.tolist() == pytest.approx([40.0, 70.0, 100.0, 20.0,
                                             0.0, 0.0])


@pytest.mark.parametrize("target", [0.0, 100.0])
def test_score_at_the_ends(target):
    scores = target_score(np.array([10.0, 90.0]), target)
    assert (scores[0] > scores[1]) == (target == 0.0)


def test_packs_below_the_target_then_prefers_the_least_loaded(conf):
    # +25 percent for the new instance; target 40.
    idle = loaded_host("idle", [0.0, 0.0])
    busy = loaded_host("busy", [10.0, 10.0])
    full = loaded_host("full", [60.0, 60.0])
    weigher = TargetLoadWeigher(conf)
    weights = weigher.raw_weights([idle, busy, full], spec())
    assert weights[1] > weights[0] > weights[2]
    # Once the busy host would pass the target, the idle one wins.
    busy = loaded_host("busy", [30.0, 30.0])
    weights = weigher.raw_weights([idle, busy], spec())
    assert weights[0] > weights[1]


def test_the_windowed_mean_is_used(conf):
    conf.set_override("target_window", 60.0, "metrics")
    host = loaded_host("h", [80.0, 5.0])
    assert TargetLoadWeigher(conf).raw_weight(host, spec(vcpus=0)) == \
        pytest.approx(float(target_score(np.array([5.0]), 40.0)[0]))


def test_a_host_without_cpu_percent_has_no_weight(conf):
    host = loaded_host("h", [10.0], age=3600.0)
    assert TargetLoadWeigher(conf).raw_weight(host, spec()) is None
