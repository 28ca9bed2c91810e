"""Nova's NumInstancesWeigher tests (nova/tests/unit/scheduler/weights/
test_weights_num_instances.py), ported to NumInstancesWeigher."""

import pytest

from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import assert_ends
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import weighed

INSTANCES = {"host1": 2, "host2": 5, "host3": 4, "host4": 10}


def _hosts() -> list:
    return [nova_host(name, f"node{name[-1]}",
                      instances={f"{name}-i{n}" for n in range(count)})
            for name, count in INSTANCES.items()]


CASES = [
    # Multiplier 0.0 by default: every host weighs 0, the first stays.
    Case("test_multiplier_default", {"top": ("host1", 0.0)}),
    Case("test_multiplier_positive", {"top": ("host4", 2.0)},
         options={"num_instances_weight_multiplier": 2.0}),
    Case("test_multiplier_negative", {"top": ("host1", 0.0)},
         options={"num_instances_weight_multiplier": -2.0}),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_num_instances_weigher(case):
    assert_ends(weighed(["NumInstancesWeigher"], _hosts(),
                        options=case.options), case.expected)
