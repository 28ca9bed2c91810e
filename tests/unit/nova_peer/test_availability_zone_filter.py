"""Nova's AvailabilityZoneFilter tests (nova/tests/unit/scheduler/
filters/test_availability_zone_filters.py, last in the release before
the filter was removed), ported to AvailabilityZoneFilter.

Nova read a host's zones from its aggregates' metadata; a node here has
one ``availability_zone`` of its own.
"""

import pytest

from scheduler.filters.availability_zone_filter import AvailabilityZoneFilter
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import passes

CASES = [
    Case("test_availability_zone_filter_same", True,
         host={"availability_zone": "nova"},
         request={"availability_zone": "nova"}),
    # Nova's host sat in two zones (nova, nova2) at once; a node has one.
    Case("test_availability_zone_filter_same_comma", True,
         host={"availability_zone": "nova"},
         request={"availability_zone": "nova"},
         differs="one-zone-per-node"),
    Case("test_availability_zone_filter_different", False,
         host={"availability_zone": "nova"},
         request={"availability_zone": "bad"}),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_availability_zone_filter(case):
    assert passes(AvailabilityZoneFilter, nova_host(**case.host),
                  nova_request(**case.request)) is case.expected


def test_second_zone_of_a_node_does_not_exist():
    # The other half of test_availability_zone_filter_same_comma: no
    # request for "nova2" reaches a node whose zone is "nova".
    assert not passes(AvailabilityZoneFilter,
                      nova_host(availability_zone="nova"),
                      nova_request(availability_zone="nova2"))
