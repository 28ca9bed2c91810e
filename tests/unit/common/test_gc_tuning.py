"""gc_tuning: the collector settings of the long-running processes."""

import gc

from scheduler.common import gc_tuning


def test_tune_raises_the_young_threshold_and_freezes_startup():
    before = gc.get_threshold()
    try:
        gc_tuning.tune()
        assert gc.get_threshold() == (gc_tuning.YOUNG_THRESHOLD,
                                      *before[1:])
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
