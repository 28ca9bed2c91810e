"""Nova's CPUWeigher tests (nova/tests/unit/scheduler/weights/
test_weights_cpu.py), ported to CPUWeigher."""

import pytest

from scheduler.weights.cpu import CPUWeigher
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import assert_ends
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import make_conf
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import weighed

# (vcpus_total, vcpus_used, cpu_allocation_ratio): 0, 2, 6, 16 free.
VCPUS = {"host1": (8, 8, 1.0), "host2": (4, 2, 1.0), "host3": (6, 0, 1.0),
         "host4": (8, 0, 2.0)}
NEGATIVE = {"vcpus_total": 4, "vcpus_used": 6, "cpu_allocation_ratio": 1.0}


def _hosts(extra: dict | None = None) -> list:
    hosts = [nova_host(name, f"node{name[-1]}", vcpus_total=total,
                       vcpus_used=used, cpu_allocation_ratio=ratio)
             for name, (total, used, ratio) in VCPUS.items()]
    if extra:
        hosts.append(nova_host("negative", "negative", **extra))
    return hosts


CASES = [
    Case("test_multiplier_default", {"top": ("host4", 1.0)}),
    Case("test_multiplier_none", {"top": (None, 0.0)},
         options={"cpu_weight_multiplier": 0.0}),
    Case("test_multiplier_positive", {"top": ("host4", 2.0)},
         options={"cpu_weight_multiplier": 2.0}),
    Case("test_multiplier_negative", {"top": ("host1", 0.0)},
         options={"cpu_weight_multiplier": -1.0}),
    Case("test_negative_host",
         {"top": ("host4", 1.0), "bottom": ("negative", 0.0)},
         host=NEGATIVE, options={"cpu_weight_multiplier": 1.0}),
    Case("test_host_with_agg", {"top": ("host1", 0.0)},
         options={"cpu_weight_multiplier": -1.0}, differs="no-aggregates"),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_cpu_weigher(case):
    assert_ends(weighed(["CPUWeigher"], _hosts(case.host),
                        options=case.options), case.expected)


def test_cpu_weigher_multiplier():
    # The aggregate half of Nova's test has no counterpart
    # (no-aggregates).
    weigher = CPUWeigher(make_conf({"cpu_weight_multiplier": -1.0}))
    assert weigher.multiplier(nova_request()) == -1.0
