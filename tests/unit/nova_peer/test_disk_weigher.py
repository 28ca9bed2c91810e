"""Nova's DiskWeigher tests (nova/tests/unit/scheduler/weights/
test_weights_disk.py), ported to DiskWeigher."""

import pytest

from scheduler.weights.disk import DiskWeigher
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import assert_ends
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import make_conf
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import weighed

FREE_DISK_MB = {"host1": 5120, "host2": 10240, "host3": 30720,
                "host4": 81920}
NEGATIVE = {"free_disk_mb": -5120, "total_usable_disk_gb": 80}


def _hosts(extra: dict | None = None) -> list:
    hosts = [nova_host(name, f"node{name[-1]}", free_disk_mb=free)
             for name, free in FREE_DISK_MB.items()]
    if extra:
        hosts.append(nova_host("negative", "negative", **extra))
    return hosts


CASES = [
    Case("test_default_of_spreading_first", {"top": ("host4", 1.0)}),
    Case("test_disk_filter_multiplier1", {"top": (None, 0.0)},
         options={"disk_weight_multiplier": 0.0}),
    Case("test_disk_filter_multiplier2", {"top": ("host4", 2.0)},
         options={"disk_weight_multiplier": 2.0}),
    Case("test_disk_filter_negative",
         {"top": ("host4", 1.0), "bottom": ("negative", 0.0)},
         host=NEGATIVE, options={"disk_weight_multiplier": 1.0}),
    Case("test_host_with_agg", {"top": ("host1", 0.0)},
         options={"disk_weight_multiplier": -1.0}, differs="no-aggregates"),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_disk_weigher(case):
    assert_ends(weighed(["DiskWeigher"], _hosts(case.host),
                        options=case.options), case.expected)


def test_disk_weigher_multiplier():
    # The aggregate half of Nova's test has no counterpart
    # (no-aggregates).
    weigher = DiskWeigher(make_conf({"disk_weight_multiplier": -1.0}))
    assert weigher.multiplier(nova_request()) == -1.0
