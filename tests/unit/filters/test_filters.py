"""Unit tests of the built-in host filters (no database, no RPC)."""

import datetime

import pytest
from oslo_config import cfg
from stevedore import driver

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.filters import compute_filter
from tests.fakes import make_host
from tests.unit.filters.fakes import NOW
from tests.unit.filters.fakes import OUR_FILTERS
from tests.unit.filters.fakes import UUID_A
from tests.unit.filters.fakes import check
from tests.unit.filters.fakes import make_spec
from tests.unit.filters.fakes import plain_conf
from tests.unit.filters.fakes import reason

pytestmark = pytest.mark.usefixtures("frozen_now")

UUID_B = "bbbbbbbb-0000-0000-0000-000000000002"




# --- plugin loading ---------------------------------------------------

@pytest.mark.parametrize("name", sorted(OUR_FILTERS))
def test_entry_point_loads(conf, name):
    manager = driver.DriverManager(
        "scheduler.filters", name, invoke_on_load=True, invoke_args=(conf,))
    assert isinstance(manager.driver, BaseHostFilter)
    assert type(manager.driver) is OUR_FILTERS[name]
    assert manager.driver.name == name


# --- ComputeFilter ----------------------------------------------------

def test_compute_up_and_enabled_passes(conf):
    assert check(conf, "ComputeFilter", make_host(), make_spec()) is None


def test_compute_disabled_rejected_with_reason(conf):
    host = make_host(disabled=True, disabled_reason="maintenance")
    rejection = check(conf, "ComputeFilter", host, make_spec())
    assert rejection.reason == "disabled"
    assert "maintenance" in rejection.detail


def test_compute_disabled_without_reason(conf):
    rejection = check(conf, "ComputeFilter", make_host(disabled=True),
                      make_spec())
    assert rejection.reason == "disabled"


def test_compute_heartbeat_exactly_service_down_time_is_up(conf):
    conf.set_override("service_down_time", 60, group="filter_scheduler")
    host = make_host(updated_at=NOW - datetime.timedelta(seconds=60))
    assert check(conf, "ComputeFilter", host, make_spec()) is None


def test_compute_heartbeat_just_beyond_is_down(conf):
    conf.set_override("service_down_time", 60, group="filter_scheduler")
    host = make_host(
        updated_at=NOW - datetime.timedelta(seconds=60, microseconds=1))
    assert reason(conf, "ComputeFilter", host, make_spec()) == "down"


def test_compute_down_detail_gives_age(conf):
    host = make_host(updated_at=NOW - datetime.timedelta(seconds=93.4))
    rejection = check(conf, "ComputeFilter", host, make_spec())
    assert rejection == Rejection("down", "no heartbeat for 93 s")


def test_compute_missing_heartbeat_is_down(conf):
    host = make_host(updated_at=None)
    assert reason(conf, "ComputeFilter", host, make_spec()) == "down"


def test_compute_service_down_time_read_per_call(conf):
    host = make_host(updated_at=NOW - datetime.timedelta(seconds=90))
    flt = compute_filter.ComputeFilter(conf)
    assert flt.reject(host, make_spec()).reason == "down"
    conf.set_override("service_down_time", 120, group="filter_scheduler")
    assert flt.reject(host, make_spec()) is None


def test_compute_uses_real_clock_by_default(conf, monkeypatch):
    monkeypatch.undo()
    fresh = make_host(updated_at=datetime.datetime.now(datetime.UTC)
                      .replace(tzinfo=None))
    assert check(conf, "ComputeFilter", fresh, make_spec()) is None


# --- RamFilter / CoreFilter / DiskFilter ------------------------------

def test_ram_exact_fit_passes_one_more_rejected(conf):
    host = make_host(memory_mb=8192, memory_mb_claimed=6144)
    assert check(conf, "RamFilter", host,
                 make_spec({"memory_mb": 2048})) is None
    assert reason(conf, "RamFilter", host,
                  make_spec({"memory_mb": 2049})) == "insufficient RAM"


def test_ram_allocation_ratio_applied(conf):
    host = make_host(memory_mb=8192, ram_allocation_ratio=1.5,
                     memory_mb_claimed=10240)
    assert check(conf, "RamFilter", host,
                 make_spec({"memory_mb": 2048})) is None
    rejection = check(conf, "RamFilter", host,
                      make_spec({"memory_mb": 4096}))
    assert rejection == Rejection(
        "insufficient RAM", "needs 4096 MB, 2048 MB free of 8192 MB x 1.5")


def test_ram_detail_fractional_free(conf):
    host = make_host(memory_mb=1001, ram_allocation_ratio=1.5,
                     memory_mb_claimed=501)
    rejection = check(conf, "RamFilter", host,
                      make_spec({"memory_mb": 1001}))
    assert rejection.detail == \
        "needs 1001 MB, 1000.5 MB free of 1001 MB x 1.5"


def test_ram_zero_request_passes_overcommitted_host(conf):
    host = make_host(memory_mb=1024, memory_mb_claimed=2048)
    assert check(conf, "RamFilter", host,
                 make_spec({"memory_mb": 0})) is None


def test_core_exact_fit_and_one_more(conf):
    host = make_host(vcpus=4, cpu_allocation_ratio=2.0, vcpus_claimed=6)
    assert check(conf, "CoreFilter", host,
                 make_spec({"vcpus": 2})) is None
    rejection = check(conf, "CoreFilter", host, make_spec({"vcpus": 3}))
    assert rejection == Rejection(
        "insufficient vCPUs", "needs 3 vCPUs, 2 vCPUs free of 4 vCPUs x 2")


def test_core_without_ratio_rejects_overcommit(conf):
    host = make_host(vcpus=4, cpu_allocation_ratio=1.0)
    assert reason(conf, "CoreFilter", host,
                  make_spec({"vcpus": 5})) == "insufficient vCPUs"


def test_disk_counts_root_and_ephemeral(conf):
    host = make_host(disk_gb=100, disk_gb_claimed=60)
    assert check(conf, "DiskFilter", host,
                 make_spec({"root_gb": 20, "ephemeral_gb": 20})) is None
    rejection = check(conf, "DiskFilter", host,
                      make_spec({"root_gb": 20, "ephemeral_gb": 21}))
    assert rejection == Rejection(
        "insufficient disk", "needs 41 GB, 40 GB free of 100 GB x 1")


def test_disk_allocation_ratio_applied(conf):
    host = make_host(disk_gb=100, disk_allocation_ratio=2.0,
                     disk_gb_claimed=150)
    assert check(conf, "DiskFilter", host,
                 make_spec({"root_gb": 50})) is None
    assert reason(conf, "DiskFilter", host,
                  make_spec({"root_gb": 51})) == "insufficient disk"


def test_disk_volume_backed_flavor_passes_full_host(conf):
    host = make_host(disk_gb=10, disk_gb_claimed=10)
    assert check(conf, "DiskFilter", host,
                 make_spec({"root_gb": 0})) is None


# --- AvailabilityZoneFilter / ClusterFilter ---------------------------

def test_az_unset_passes_any_host(conf):
    assert check(conf, "AvailabilityZoneFilter",
                 make_host(availability_zone=None), make_spec()) is None


def test_az_match_and_mismatch(conf):
    spec = make_spec(availability_zone="az1")
    assert check(conf, "AvailabilityZoneFilter",
                 make_host(availability_zone="az1"), spec) is None
    for other in ("az2", None):
        assert reason(conf, "AvailabilityZoneFilter",
                      make_host(availability_zone=other),
                      spec) == "not in availability zone az1"


def test_cluster_unset_passes_any_host(conf):
    assert check(conf, "ClusterFilter", make_host(cluster="c1"),
                 make_spec()) is None


def test_cluster_match_and_mismatch(conf):
    spec = make_spec(cluster="c1")
    assert check(conf, "ClusterFilter", make_host(cluster="c1"),
                 spec) is None
    for other in ("c2", None):
        assert reason(conf, "ClusterFilter", make_host(cluster=other),
                      spec) == "not in cluster c1"


# --- NetworkFilter ----------------------------------------------------

def test_network_none_requested_passes(conf):
    assert check(conf, "NetworkFilter", make_host(), make_spec()) is None


def test_network_all_present_passes(conf):
    host = make_host(networks=frozenset({"a", "b", "c"}))
    assert check(conf, "NetworkFilter", host,
                 make_spec(requested_networks=["a", "c"])) is None


def test_network_missing_sorted_in_reason(conf):
    host = make_host(networks=frozenset({"b"}))
    spec = make_spec(requested_networks=["z", "b", "a"])
    assert reason(conf, "NetworkFilter", host,
                  spec) == "missing network(s) a, z"


# --- PinToHostFilter / IgnoreHostsFilter ------------------------------

def test_pin_empty_lists_pass(conf):
    assert check(conf, "PinToHostFilter", make_host(),
                 make_spec(force_hosts=[], force_nodes=[])) is None


def test_pin_force_hosts(conf):
    spec = make_spec(force_hosts=["host1", "host3"])
    assert check(conf, "PinToHostFilter", make_host(host="host1"),
                 spec) is None
    assert reason(conf, "PinToHostFilter", make_host(host="host2"),
                  spec) == "not a forced host"


def test_pin_force_nodes_matches_nodename(conf):
    spec = make_spec(force_nodes=["node7"])
    assert check(conf, "PinToHostFilter",
                 make_host(host="host1", nodename="node7"), spec) is None
    assert reason(conf, "PinToHostFilter",
                  make_host(host="node7", nodename="node1"),
                  spec) == "not a forced host"


def test_pin_both_lists_must_match(conf):
    spec = make_spec(force_hosts=["host1"], force_nodes=["node2"])
    assert check(conf, "PinToHostFilter",
                 make_host(host="host1", nodename="node2"), spec) is None
    assert reason(conf, "PinToHostFilter",
                  make_host(host="host1", nodename="node1"),
                  spec) == "not a forced host"


def test_ignore_hosts(conf):
    spec = make_spec(ignore_hosts=["host2"])
    assert check(conf, "IgnoreHostsFilter", make_host(host="host1"),
                 spec) is None
    assert reason(conf, "IgnoreHostsFilter", make_host(host="host2"),
                  spec) == "ignored by request"


def test_ignore_hosts_empty_passes(conf):
    assert check(conf, "IgnoreHostsFilter", make_host(),
                 make_spec(ignore_hosts=[])) is None


# --- NumInstancesFilter -----------------------------------------------

def test_num_instances_below_limit_passes_at_limit_rejected(conf):
    conf.set_override("max_instances_per_host", 2,
                      group="filter_scheduler")
    assert check(conf, "NumInstancesFilter",
                 make_host(instances={UUID_A}), make_spec()) is None
    rejection = check(conf, "NumInstancesFilter",
                      make_host(instances={UUID_A, UUID_B}), make_spec())
    assert rejection == Rejection("too many instances",
                                  "2 instances, limit 2")


# --- SameHostFilter / DifferentHostFilter -----------------------------

def test_same_host_without_hint_passes(conf):
    assert check(conf, "SameHostFilter", make_host(), make_spec()) is None


@pytest.mark.parametrize("hint", [UUID_A, [UUID_A], [UUID_B, UUID_A]])
def test_same_host_hint_string_or_list(conf, hint):
    spec = make_spec(scheduler_hints={"same_host": hint})
    assert check(conf, "SameHostFilter", make_host(instances={UUID_A}),
                 spec) is None
    assert reason(conf, "SameHostFilter", make_host(instances=set()),
                  spec) == "not with same_host instances"


def test_same_host_empty_list_passes(conf):
    spec = make_spec(scheduler_hints={"same_host": []})
    assert check(conf, "SameHostFilter", make_host(), spec) is None


def test_different_host_without_hint_passes(conf):
    assert check(conf, "DifferentHostFilter",
                 make_host(instances={UUID_A}), make_spec()) is None


@pytest.mark.parametrize("hint", [UUID_A, [UUID_A], [UUID_B, UUID_A]])
def test_different_host_hint_string_or_list(conf, hint):
    spec = make_spec(scheduler_hints={"different_host": hint})
    assert check(conf, "DifferentHostFilter", make_host(instances=set()),
                 spec) is None
    rejection = check(conf, "DifferentHostFilter",
                      make_host(instances={UUID_A}), spec)
    assert rejection.reason == "has different_host instances"
    assert UUID_A in rejection.detail


def test_different_host_empty_list_passes(conf):
    spec = make_spec(scheduler_hints={"different_host": []})
    assert check(conf, "DifferentHostFilter",
                 make_host(instances={UUID_A}), spec) is None


@pytest.fixture
def conf() -> cfg.ConfigOpts:
    return plain_conf()


# --- BaseHostFilter: reject() and rejections() -------------------------

def test_rejections_default_asks_reject_per_host(conf):
    class Even(BaseHostFilter):
        def reject(self, host, spec):
            return None if host.node_id % 2 == 0 else Rejection("odd")

    hosts = [make_host(node_id=i) for i in range(4)]
    assert Even(conf).rejections(hosts, make_spec()) == [
        None, Rejection("odd"), None, Rejection("odd")]


def test_reject_default_asks_rejections(conf):
    class Even(BaseHostFilter):
        def rejections(self, hosts, spec):
            return [None if h.node_id % 2 == 0 else Rejection("odd")
                    for h in hosts]

    assert Even(conf).reject(make_host(node_id=2), make_spec()) is None
    assert Even(conf).reject(make_host(node_id=3), make_spec()) == \
        Rejection("odd")
    with pytest.raises(NotImplementedError):
        BaseHostFilter(conf).reject(make_host(), make_spec())
