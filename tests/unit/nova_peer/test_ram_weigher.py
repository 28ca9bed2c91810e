"""Nova's RAMWeigher tests (nova/tests/unit/scheduler/weights/
test_weights_ram.py), ported to RAMWeigher."""

import pytest

from scheduler.weights.ram import RAMWeigher
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import assert_ends
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import make_conf
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import weighed

FREE_RAM = {"host1": 512, "host2": 1024, "host3": 3072, "host4": 8192}
NEGATIVE = {"free_ram_mb": -512, "total_usable_ram_mb": 8192}


def _hosts(extra: dict | None = None) -> list:
    hosts = [nova_host(name, f"node{name[-1]}", free_ram_mb=free)
             for name, free in FREE_RAM.items()]
    if extra:
        hosts.append(nova_host("negative", "negative", **extra))
    return hosts


CASES = [
    Case("test_default_of_spreading_first", {"top": ("host4", 1.0)}),
    Case("test_ram_filter_multiplier1", {"top": (None, 0.0)},
         options={"ram_weight_multiplier": 0.0}),
    Case("test_ram_filter_multiplier2", {"top": ("host4", 2.0)},
         options={"ram_weight_multiplier": 2.0}),
    Case("test_ram_filter_negative",
         {"top": ("host4", 1.0), "bottom": ("negative", 0.0)},
         host=NEGATIVE, options={"ram_weight_multiplier": 1.0}),
    # Nova's aggregate metadata would set the multiplier to 1.5 and put
    # host4 first; the configured -1.0 stacks onto host1 instead.
    Case("test_host_with_agg", {"top": ("host1", 0.0)},
         options={"ram_weight_multiplier": -1.0}, differs="no-aggregates"),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_ram_weigher(case):
    assert_ends(weighed(["RAMWeigher"], _hosts(case.host),
                        options=case.options), case.expected)


def test_ram_weigher_multiplier():
    # Nova's test then reads 2.0 and 1.5 from aggregates, which do not
    # exist here (no-aggregates): the configured value is the multiplier.
    weigher = RAMWeigher(make_conf({"ram_weight_multiplier": -1.0}))
    assert weigher.multiplier(nova_request()) == -1.0


def test_weights_scale_from_the_smallest_candidate_not_from_zero():
    # Difference "normalisation": Nova's RAMWeigher scales from 0
    # (512 MB of 8192 weighs 0.0625); minmax scales from the smallest
    # candidate. The order is the same.
    ranking = dict(weighed(["RAMWeigher"], _hosts()))
    assert ranking == pytest.approx({
        "host4": 1.0, "host3": (3072 - 512) / (8192 - 512),
        "host2": (1024 - 512) / (8192 - 512), "host1": 0.0})
    from_zero = dict(weighed(["RAMWeigher"], _hosts(), options={
        "weight_normalization": "hardmax"}))
    assert from_zero == pytest.approx(
        {name: free / 8192 for name, free in FREE_RAM.items()})
