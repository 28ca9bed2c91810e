"""Nova's affinity filter tests (nova/tests/unit/scheduler/filters/
test_affinity_filters.py), ported to SameHostFilter, DifferentHostFilter,
ServerGroupAffinityFilter and ServerGroupAntiAffinityFilter.

Nova's request carries the server group (policy, members, hosts); here
the ``group`` and ``group_policy`` hints name it and the scheduler fills
``group_hosts`` with the hosts holding members. Nova's
SimpleCIDRAffinityFilter has no counterpart and is not ported.
"""

import pytest

from scheduler.filters.affinity_filter import DifferentHostFilter
from scheduler.filters.affinity_filter import SameHostFilter
from scheduler.filters.affinity_filter import ServerGroupAffinityFilter
from scheduler.filters.affinity_filter import ServerGroupAntiAffinityFilter
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import passes

INSTANCE = "aaaaaaaa-0000-0000-0000-000000000001"
INSTANCE2 = "aaaaaaaa-0000-0000-0000-000000000002"


def _group(policy: str, hosts: tuple[str, ...] = ()) -> dict:
    return {"hints": {"group": "g1", "group_policy": policy},
            "group_hosts": set(hosts)}


INSTANCE_CASES = [
    (DifferentHostFilter, Case(
        "test_affinity_different_filter_passes", True,
        host={"instances": {INSTANCE}},
        request={"hints": {"different_host": ["same"]}})),
    (DifferentHostFilter, Case(
        "test_affinity_different_filter_fails", False,
        host={"instances": {INSTANCE}},
        request={"hints": {"different_host": [INSTANCE]}})),
    (DifferentHostFilter, Case(
        "test_affinity_different_filter_handles_none", True,
        host={"instances": {INSTANCE}})),
    (SameHostFilter, Case(
        "test_affinity_same_filter_passes", True,
        host={"instances": {INSTANCE}},
        request={"hints": {"same_host": [INSTANCE]}})),
    (SameHostFilter, Case(
        "test_affinity_same_filter_no_list_passes", False,
        host={"instances": set()},
        request={"hints": {"same_host": ["same"]}})),
    (SameHostFilter, Case(
        "test_affinity_same_filter_fails", False,
        host={"instances": {INSTANCE}},
        request={"hints": {"same_host": ["same"]}})),
    (SameHostFilter, Case(
        "test_affinity_same_filter_handles_none", True,
        host={"instances": {INSTANCE}})),
]

# The host under test is host1; group_hosts are where members run.
GROUP_CASES = [
    (ServerGroupAntiAffinityFilter, Case(
        "test_group_anti_affinity_filter_passes[no group]", True)),
    (ServerGroupAntiAffinityFilter, Case(
        "test_group_anti_affinity_filter_passes[affinity policy]", True,
        request=_group("affinity"))),
    (ServerGroupAntiAffinityFilter, Case(
        "test_group_anti_affinity_filter_passes[no hosts]", True,
        request=_group("anti-affinity"))),
    (ServerGroupAntiAffinityFilter, Case(
        "test_group_anti_affinity_filter_passes[other host]", True,
        request=_group("anti-affinity", ("host2",)))),
    (ServerGroupAntiAffinityFilter, Case(
        "test_group_anti_affinity_filter_fails", False,
        host={"instances": {INSTANCE}, "instance_groups": {"g1"}},
        request=_group("anti-affinity", ("host1",)))),
    # max_server_per_host 1 and 2 with as many members on the host.
    (ServerGroupAntiAffinityFilter, Case(
        "test_group_anti_affinity_filter_with_rules_fail", False,
        host={"instances": {INSTANCE, INSTANCE2},
              "instance_groups": {"g1"}},
        request=_group("anti-affinity", ("host1",)))),
    # max_server_per_host 1 and no member on the host: passes.
    (ServerGroupAntiAffinityFilter, Case(
        "test_group_anti_affinity_filter_with_rules_pass[no member]", True,
        host={"instances": {INSTANCE, INSTANCE2}},
        request=_group("anti-affinity"))),
    # max_server_per_host 2 and one member on the host: Nova passes;
    # without rules one member is one too many.
    (ServerGroupAntiAffinityFilter, Case(
        "test_group_anti_affinity_filter_with_rules_pass[one of two]",
        False,
        host={"instances": {INSTANCE, INSTANCE2},
              "instance_groups": {"g1"}},
        request=_group("anti-affinity", ("host1",)),
        differs="group-presence")),
    # Nova lets the instance being moved stay on its own host; a host is
    # known to hold a member, not which instance it is.
    (ServerGroupAntiAffinityFilter, Case(
        "test_group_anti_affinity_filter_allows_instance_to_same_host",
        False,
        host={"instances": {INSTANCE}, "instance_groups": {"g1"}},
        request=_group("anti-affinity", ("host1", "host2")),
        differs="group-presence")),
    (ServerGroupAffinityFilter, Case(
        "test_group_affinity_filter_passes[no group]", True)),
    (ServerGroupAffinityFilter, Case(
        "test_group_affinity_filter_passes[anti-affinity policy]", True,
        request=_group("anti-affinity"))),
    (ServerGroupAffinityFilter, Case(
        "test_group_affinity_filter_passes[on a group host]", True,
        request=_group("affinity", ("host1",)))),
    (ServerGroupAffinityFilter, Case(
        "test_group_affinity_filter_fails", False,
        request=_group("affinity", ("host2",)))),
]

CASES = INSTANCE_CASES + GROUP_CASES


@pytest.mark.parametrize(("filter_class", "case"), CASES,
                         ids=ids([case for _cls, case in CASES]))
def test_nova_affinity_filters(filter_class, case):
    fields = dict(case.request)
    group_hosts = fields.pop("group_hosts", set())
    request = nova_request(**fields)
    request.group_hosts = group_hosts
    assert passes(filter_class, nova_host(**case.host),
                  request) is case.expected
