"""Whatever changed nodes, and however the cache took the changes in
(incremental refreshes, claims taken in, reports alone, full loads), it
holds what a fresh load of the database reads (the nodes deleted since
its last full load aside), and its table's patched columns what
building them from its hosts gives."""

import numpy as np
import pytest

from scheduler.hosts.cache.manager import HostManager
from tests.unit.hosts.cache import sequence

_SEQUENCE_ONLY = ("metric_history", "instance_history")


def _comparable(state) -> dict:
    return {name: value for name, value
            in sequence.state_values(state).items()
            if name not in _SEQUENCE_ONLY}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_cache_holds_what_a_fresh_load_reads(conf, engine, manager,
                                                 clock, seed):
    conf.set_override("instance_history_window", 600, group="metrics")
    changes = sequence.Sequence(engine, manager, clock, seed)
    try:
        for _ in range(60):
            changes.step()
            cached = {state.node_id: _comparable(state)
                      for state in manager.host_states()}
            fresh = {state.node_id: _comparable(state)
                     for state in HostManager(conf).host_states()}
            # Deleted nodes leave the cache with its next full load.
            assert fresh.keys() <= cached.keys()
            assert {node: cached[node] for node in fresh} == fresh
            for key, patched, built in sequence.columns(manager):
                assert np.array_equal(patched, built, equal_nan=True), key
    finally:
        conf.clear_override("instance_history_window", group="metrics")
