"""Nova's ComputeFilter tests (nova/tests/unit/scheduler/filters/
test_compute_filters.py), ported to ComputeFilter.

Nova asks its servicegroup API whether a host's service is up; here a
node is up when its own heartbeat (``updated_at``) is no older than
``[filter_scheduler] service_down_time``, the same rule with the
node's report as the heartbeat.
"""

import datetime

import pytest

from scheduler.filters.compute_filter import ComputeFilter
from tests.unit.nova_peer.support import NOW
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import passes

LONG_AGO = NOW - datetime.timedelta(hours=1)

CASES = [
    Case("test_compute_filter_manual_disable", False,
         host={"free_ram_mb": 1024, "disabled": True}),
    Case("test_compute_filter_sgapi_passes", True,
         host={"free_ram_mb": 1024, "disabled": False}),
    Case("test_compute_filter_sgapi_fails", False,
         host={"free_ram_mb": 1024, "disabled": False,
               "updated_at": LONG_AGO}),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_compute_filter(case):
    assert passes(ComputeFilter, nova_host(**case.host),
                  nova_request(memory_mb=1024)) is case.expected
