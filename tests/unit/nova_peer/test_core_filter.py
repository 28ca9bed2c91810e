"""Nova's CoreFilter tests (nova/tests/unit/scheduler/filters/
test_core_filters.py, last in the release before the filter was
removed), ported to CoreFilter."""

import pytest

from scheduler.filters.core_filter import CoreFilter
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import passes

CASES = [
    Case("test_core_filter_passes", True,
         host={"vcpus_total": 4, "vcpus_used": 7,
               "cpu_allocation_ratio": 2},
         request={"vcpus": 1}),
    # Nova passed a node reporting no vCPUs at all ("fail safe"); here a
    # node without vCPUs has no room for one.
    Case("test_core_filter_fails_safe", False,
         host={"vcpus_total": 0}, request={"vcpus": 1},
         differs="zero-capacity-node"),
    Case("test_core_filter_fails", False,
         host={"vcpus_total": 4, "vcpus_used": 8,
               "cpu_allocation_ratio": 2},
         request={"vcpus": 1}),
    Case("test_core_filter_single_instance_overcommit_fails", False,
         host={"vcpus_total": 1, "vcpus_used": 0,
               "cpu_allocation_ratio": 2},
         request={"vcpus": 2}),
    # AggregateCoreFilter's tests, with the node's own ratio.
    Case("test_aggregate_core_filter_value_error", True,
         host={"vcpus_total": 4, "vcpus_used": 7,
               "cpu_allocation_ratio": 2},
         request={"vcpus": 1}, differs="no-aggregates"),
    Case("test_aggregate_core_filter_default_value", False,
         host={"vcpus_total": 4, "vcpus_used": 8,
               "cpu_allocation_ratio": 2},
         request={"vcpus": 1}, differs="no-aggregates"),
    Case("test_aggregate_core_filter_conflict_values", False,
         host={"vcpus_total": 4, "vcpus_used": 8,
               "cpu_allocation_ratio": 1},
         request={"vcpus": 1}, differs="no-aggregates"),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_core_filter(case):
    assert passes(CoreFilter, nova_host(**case.host),
                  nova_request(**case.request)) is case.expected
