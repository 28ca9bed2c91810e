"""Nova's NumInstancesFilter tests (nova/tests/unit/scheduler/filters/
test_num_instances_filters.py), ported to NumInstancesFilter."""

import pytest

from scheduler.filters.num_instances_filter import NumInstancesFilter
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import make_conf
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import passes


def _instances(count: int) -> set[str]:
    return {f"instance-{n}" for n in range(count)}


CASES = [
    Case("test_filter_num_instances_passes", True,
         host={"instances": _instances(4)},
         options={"max_instances_per_host": 5}),
    Case("test_filter_num_instances_fails", False,
         host={"instances": _instances(5)},
         options={"max_instances_per_host": 5}),
    # AggregateNumInstancesFilter's tests: the configured limit applies,
    # no aggregate raises it.
    Case("test_filter_aggregate_num_instances_value", False,
         host={"instances": _instances(5)},
         options={"max_instances_per_host": 4}, differs="no-aggregates"),
    Case("test_filter_aggregate_num_instances_value_error", True,
         host={}, options={"max_instances_per_host": 6},
         differs="no-aggregates"),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_num_instances_filter(case):
    assert passes(NumInstancesFilter, nova_host(**case.host),
                  nova_request(), make_conf(case.options)) is case.expected
