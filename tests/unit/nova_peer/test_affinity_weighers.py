"""Nova's soft affinity weigher tests (nova/tests/unit/scheduler/
weights/test_weights_affinity.py), ported to
ServerGroupSoftAffinityWeigher and ServerGroupSoftAntiAffinityWeigher.

Nova counts a group's members on each host; here a host is known to
hold members of a group or not (``group-presence``), so soft affinity
ties the hosts holding any, broken by name.
"""

import pytest

from scheduler.weights.affinity import ServerGroupSoftAffinityWeigher
from scheduler.weights.affinity import ServerGroupSoftAntiAffinityWeigher
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import assert_ends
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import make_conf
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import weighed

# The groups with members on each host: Nova's hosts hold 1, 4 (and both
# of group "other"), 0 and 2 of group "default"'s 7 members.
GROUPS = {"host1": {"default"}, "host2": {"default", "other"},
          "host3": set(), "host4": {"default"}}

SOFT = "ServerGroupSoftAffinityWeigher"
ANTI = "ServerGroupSoftAntiAffinityWeigher"


def _hosts() -> list:
    return [nova_host(name, f"node{name[-1]}", instance_groups=groups)
            for name, groups in GROUPS.items()]


def _request(policy: str, group: str = "default"):
    return nova_request(hints={"group": group, "group_policy": policy})


CASES = [
    (SOFT, Case("test_soft_affinity_weight_multiplier_by_default",
                {"top": ("host1", 1.0)}, request={"policy": "soft-affinity"},
                differs="group-presence")),
    (SOFT, Case("test_soft_affinity_weight_multiplier_zero_value",
                {"top": (None, 0.0)}, request={"policy": "soft-affinity"},
                options={"soft_affinity_weight_multiplier": 0.0})),
    (SOFT, Case("test_soft_affinity_weight_multiplier_positive_value",
                {"top": ("host1", 2.0)}, request={"policy": "soft-affinity"},
                options={"soft_affinity_weight_multiplier": 2.0},
                differs="group-presence")),
    (SOFT, Case("test_host_with_agg", {"top": (None, 0.0)},
                request={"policy": "soft-affinity"},
                options={"soft_affinity_weight_multiplier": 0.0},
                differs="no-aggregates")),
    (SOFT, Case("test_running_twice[default group]", {"top": ("host1", 1.0)},
                request={"policy": "soft-affinity"},
                differs="group-presence")),
    (SOFT, Case("test_running_twice[other group]", {"top": ("host2", 1.0)},
                request={"policy": "soft-affinity", "group": "other"})),
    (ANTI, Case("test_soft_anti_affinity_weight_multiplier_by_default",
                {"top": ("host3", 1.0)},
                request={"policy": "soft-anti-affinity"})),
    (ANTI, Case("test_soft_anti_affinity_weight_multiplier_zero_value",
                {"top": (None, 0.0)},
                request={"policy": "soft-anti-affinity"},
                options={"soft_anti_affinity_weight_multiplier": 0.0})),
    (ANTI, Case("test_soft_anti_affinity_weight_multiplier_positive_value",
                {"top": ("host3", 2.0)},
                request={"policy": "soft-anti-affinity"},
                options={"soft_anti_affinity_weight_multiplier": 2.0})),
    (ANTI, Case("test_host_with_agg[anti-affinity]", {"top": (None, 0.0)},
                request={"policy": "soft-anti-affinity"},
                options={"soft_anti_affinity_weight_multiplier": 0.0},
                differs="no-aggregates")),
]


@pytest.mark.parametrize(("weigher", "case"), CASES,
                         ids=ids([case for _weigher, case in CASES]))
def test_nova_soft_affinity_weighers(weigher, case):
    ranking = weighed([weigher], _hosts(), _request(**case.request),
                      case.options)
    assert_ends(ranking, case.expected)


@pytest.mark.parametrize(("weigher_class", "option"), [
    (ServerGroupSoftAffinityWeigher, "soft_affinity_weight_multiplier"),
    (ServerGroupSoftAntiAffinityWeigher,
     "soft_anti_affinity_weight_multiplier"),
])
def test_soft_affinity_weight_multiplier(weigher_class, option):
    # Nova's test_soft_(anti_)affinity_weight_multiplier: 0.0 from the
    # configuration; its aggregate half has no counterpart.
    weigher = weigher_class(make_conf({option: 0.0}))
    assert weigher.multiplier(_request("soft-affinity")) == 0.0
