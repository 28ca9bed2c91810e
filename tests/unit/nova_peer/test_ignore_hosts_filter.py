"""Nova's ignore_hosts tests (nova/tests/unit/scheduler/
test_host_manager.py, ``test_get_filtered_hosts*``), ported to
IgnoreHostsFilter. Nova's host manager strips ignored hosts before the
filters run; here a filter does it, with the same outcome."""

import pytest

from scheduler.filters.ignore_hosts_filter import IgnoreHostsFilter
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import names
from tests.unit.nova_peer.support import nova_fleet
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import passing

ALL = {"fake_host1/fake-node", "fake_host2/fake-node",
       "fake_host3/fake-node", "fake_host4/fake-node",
       "fake_multihost/fake-node1", "fake_multihost/fake-node2",
       "fake_multihost/fake-node3", "fake_multihost/fake-node4"}

CASES = [
    Case("test_get_filtered_hosts", ALL, request={"ignore_hosts": []}),
    Case("test_get_filtered_hosts_with_ignore",
         {"fake_host2/fake-node", "fake_host4/fake-node"},
         request={"ignore_hosts": ["fake_host1", "fake_host3",
                                   "fake_host5", "fake_multihost"]}),
    Case("test_get_filtered_hosts_with_ignore_case_insensitive",
         {"fake_host2/fake-node", "fake_host4/fake-node"},
         request={"ignore_hosts": ["FAKE_HOST1", "FaKe_HoSt3",
                                   "Fake_Multihost"]}),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_ignore_hosts(case):
    hosts = nova_fleet()
    kept = passing(IgnoreHostsFilter, hosts, nova_request(**case.request))
    assert names(hosts, kept) == case.expected
