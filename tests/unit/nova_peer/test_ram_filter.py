"""Nova's RamFilter tests (nova/tests/unit/scheduler/filters/
test_ram_filters.py, last in the release before the filter was removed),
ported to RamFilter."""

import pytest

from scheduler.filters.ram_filter import RamFilter
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import passes

CASES = [
    Case("test_ram_filter_fails_on_memory", False,
         host={"free_ram_mb": 1023, "total_usable_ram_mb": 1024,
               "ram_allocation_ratio": 1.0},
         request={"memory_mb": 1024}),
    Case("test_ram_filter_passes", True,
         host={"free_ram_mb": 1024, "total_usable_ram_mb": 1024,
               "ram_allocation_ratio": 1.0},
         request={"memory_mb": 1024}),
    Case("test_ram_filter_oversubscribe", True,
         host={"free_ram_mb": -1024, "total_usable_ram_mb": 2048,
               "ram_allocation_ratio": 2.0},
         request={"memory_mb": 1024}),
    # The instance is larger than the whole node: refused at any ratio.
    Case("test_ram_filter_oversubscribe_singe_instance_fails", False,
         host={"free_ram_mb": 512, "total_usable_ram_mb": 512,
               "ram_allocation_ratio": 2.0},
         request={"memory_mb": 1024}),
    # AggregateRamFilter's tests: the ratio comes from the node (or
    # [filter_scheduler] ram_allocation_ratio), never from an aggregate.
    Case("test_aggregate_ram_filter_value_error", True,
         host={"free_ram_mb": 1024, "total_usable_ram_mb": 1024,
               "ram_allocation_ratio": 1.0},
         request={"memory_mb": 1024}, differs="no-aggregates"),
    Case("test_aggregate_ram_filter_default_value", False,
         host={"free_ram_mb": 1023, "total_usable_ram_mb": 1024,
               "ram_allocation_ratio": 1.0},
         request={"memory_mb": 1024}, differs="no-aggregates"),
    Case("test_aggregate_ram_filter_conflict_values", False,
         host={"free_ram_mb": 1023, "total_usable_ram_mb": 1024,
               "ram_allocation_ratio": 1.0},
         request={"memory_mb": 1024}, differs="no-aggregates"),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_ram_filter(case):
    assert passes(RamFilter, nova_host(**case.host),
                  nova_request(**case.request)) is case.expected


def test_limit_is_total_times_ratio_as_nova_records_it():
    # Nova recorded host.limits['memory_mb'] = 2048 x 2.0 in
    # test_ram_filter_oversubscribe; here the same limit shows as the free
    # RAM of an empty node, and a request of exactly it fits no more.
    host = nova_host(free_ram_mb=2048, total_usable_ram_mb=2048,
                     ram_allocation_ratio=2.0)
    assert host.free_ram_mb == 2048 * 2.0
