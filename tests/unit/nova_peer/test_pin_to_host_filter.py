"""Nova's force_hosts / force_nodes tests (nova/tests/unit/scheduler/
test_host_manager.py, ``test_get_filtered_hosts_with_force*``), ported
to PinToHostFilter (with IgnoreHostsFilter where Nova's test also
ignores hosts).

Nova's host manager returns forced hosts without running the other
filters; here PinToHostFilter is one filter among the others, so a
forced host that is full or down is still refused (difference
``forced-hosts-filtered``, not visible at this level).
"""

import pytest

from scheduler.filters.ignore_hosts_filter import IgnoreHostsFilter
from scheduler.filters.pin_to_host_filter import PinToHostFilter
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import names
from tests.unit.nova_peer.support import nova_fleet
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import passing

CASES = [
    Case("test_get_filtered_hosts_with_force_hosts",
         {"fake_host1/fake-node", "fake_host3/fake-node"},
         request={"force_hosts": ["fake_host1", "fake_host3",
                                  "fake_host5"]}),
    Case("test_get_filtered_hosts_with_force_case_insensitive",
         {"fake_host1/fake-node", "fake_host3/fake-node",
          "fake_host4/fake-node"},
         request={"force_hosts": ["FAKE_HOST1", "FaKe_HoSt3", "fake_host4",
                                  "faKe_host5"]}),
    Case("test_get_filtered_hosts_with_no_matching_force_hosts", set(),
         request={"force_hosts": ["fake_host5", "fake_host6"]}),
    Case("test_get_filtered_hosts_with_ignore_and_force_hosts",
         {"fake_host3/fake-node"},
         request={"ignore_hosts": ["fake_host1"],
                  "force_hosts": ["fake_host3", "fake_host1"]}),
    Case("test_get_filtered_hosts_with_force_host_and_many_nodes",
         {"fake_multihost/fake-node1", "fake_multihost/fake-node2",
          "fake_multihost/fake-node3", "fake_multihost/fake-node4"},
         request={"force_hosts": ["fake_multihost"]}),
    Case("test_get_filtered_hosts_with_force_nodes",
         {"fake_multihost/fake-node2", "fake_multihost/fake-node4"},
         request={"force_nodes": ["fake-node2", "fake-node4",
                                  "fake-node9"]}),
    Case("test_get_filtered_hosts_with_force_hosts_and_nodes",
         {"fake_multihost/fake-node2"},
         request={"force_hosts": ["fake-host1", "fake_multihost"],
                  "force_nodes": ["fake-node2", "fake-node9"]}),
    Case("test_get_filtered_hosts_with_force_hosts_and_wrong_nodes", set(),
         request={"force_hosts": ["fake_multihost"],
                  "force_nodes": ["fake-node"]}),
    Case("test_get_filtered_hosts_with_ignore_hosts_and_force_nodes",
         {"fake_multihost/fake-node2", "fake_multihost/fake-node4"},
         request={"ignore_hosts": ["fake_host1", "fake_host2"],
                  "force_nodes": ["fake-node4", "fake-node2"]}),
    Case("test_get_filtered_hosts_with_ignore_hosts_and_force_same_nodes",
         set(),
         request={"ignore_hosts": ["fake_multihost"],
                  "force_nodes": ["fake_node4", "fake_node2"]}),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_force_hosts_and_nodes(case):
    hosts = nova_fleet()
    request = nova_request(**case.request)
    pinned = passing(PinToHostFilter, hosts, request)
    kept = [pin and keep for pin, keep in zip(
        pinned, passing(IgnoreHostsFilter, hosts, request), strict=True)]
    assert names(hosts, kept) == case.expected


def test_force_nodes_match_case_insensitively():
    # Nova matches force_nodes exactly (difference force-nodes-case);
    # here node names match as host names do.
    hosts = nova_fleet()
    kept = passing(PinToHostFilter, hosts,
                   nova_request(force_nodes=["FAKE-NODE2"]))
    assert names(hosts, kept) == {"fake_multihost/fake-node2"}
