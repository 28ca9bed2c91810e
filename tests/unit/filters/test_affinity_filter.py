"""scheduler.filters.affinity_filter: the server group filters."""

import pytest
from oslo_config import cfg

from scheduler.request.spec import RequestSpec
from tests.fakes import make_host
from tests.unit.filters.fakes import UUID_A
from tests.unit.filters.fakes import check
from tests.unit.filters.fakes import make_spec
from tests.unit.filters.fakes import plain_conf
from tests.unit.filters.fakes import reason

pytestmark = pytest.mark.usefixtures("frozen_now")


@pytest.fixture
def conf() -> cfg.ConfigOpts:
    return plain_conf()

# --- server group filters ---------------------------------------------

def group_spec(policy: str, group_hosts=()) -> RequestSpec:
    spec = make_spec(scheduler_hints={"group": "g1",
                                      "group_policy": policy})
    spec.group_hosts = set(group_hosts)
    return spec


def test_affinity_first_member_goes_anywhere(conf):
    assert check(conf, "ServerGroupAffinityFilter", make_host(),
                 group_spec("affinity")) is None


def test_affinity_requires_group_host(conf):
    spec = group_spec("affinity", {"host2"})
    assert check(conf, "ServerGroupAffinityFilter",
                 make_host(host="host2"), spec) is None
    rejection = check(conf, "ServerGroupAffinityFilter",
                      make_host(host="host1"), spec)
    assert rejection.reason == "server group affinity"
    assert "host2" in rejection.detail


def test_affinity_ignores_other_policies_and_no_group(conf):
    host = make_host(host="host1")
    for policy in ("anti-affinity", "soft-affinity", "soft-anti-affinity"):
        assert check(conf, "ServerGroupAffinityFilter", host,
                     group_spec(policy, {"host2"})) is None
    spec = make_spec(scheduler_hints={"group_policy": "affinity"})
    spec.group_hosts = {"host2"}
    assert check(conf, "ServerGroupAffinityFilter", host, spec) is None


def test_anti_affinity_rejects_group_host(conf):
    spec = group_spec("anti-affinity", {"host1"})
    assert reason(conf, "ServerGroupAntiAffinityFilter",
                  make_host(host="host1"),
                  spec) == "server group anti-affinity"
    assert check(conf, "ServerGroupAntiAffinityFilter",
                 make_host(host="host2"), spec) is None


def test_anti_affinity_no_members_yet_passes(conf):
    assert check(conf, "ServerGroupAntiAffinityFilter", make_host(),
                 group_spec("anti-affinity")) is None


def test_anti_affinity_sees_member_consumed_in_this_request(conf):
    # consume() records the group before spec.group_hosts is refreshed.
    host = make_host(host="host1")
    host.consume(1, 512, 1, instance_uuid=UUID_A, group="g1")
    assert reason(conf, "ServerGroupAntiAffinityFilter", host,
                  group_spec("anti-affinity")) == \
        "server group anti-affinity"


def test_anti_affinity_ignores_other_policies(conf):
    host = make_host(host="host1")
    for policy in ("affinity", "soft-affinity", "soft-anti-affinity"):
        assert check(conf, "ServerGroupAntiAffinityFilter", host,
                     group_spec(policy, {"host1"})) is None
