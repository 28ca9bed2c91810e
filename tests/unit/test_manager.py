"""SchedulerManager, the façade: reply shape, claims, retries, rollback,
options, over SQLite. Request validation is tested in
request/test_validation.py, the cluster lock in placement/test_lock.py,
the pending-claims wait in placement/test_pending.py."""

import threading

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler import claims
from scheduler import exception
from scheduler.hosts.cache.manager import HostManager
from tests.fakes import NODES
from tests.fakes import add_node
from tests.fakes import allocations
from tests.fakes import fill_secretly
from tests.fakes import make_manager
from tests.fakes import spec
from tests.fakes import uuids

ENTRY_KEYS = {"host", "nodename", "uuid", "weight", "allocation_id"}


# Placement and reply shape


def test_reply_shape_and_claim(mgr, engine):
    node_uuids = {}
    for name in ("a", "b", "c", "d"):
        node_id = add_node(engine, name, memory_mb={"a": 4096}.get(
            name, 8192))
        node_uuids[name] = node_id
    instance = uuids(1)
    result = mgr.select_destinations(spec(), instance)
    assert len(result) == 1 and len(result[0]) == 1
    entry = result[0][0]
    assert set(entry) == ENTRY_KEYS
    row, = allocations(engine)
    assert entry["allocation_id"] == row.uuid
    assert row.instance_uuid == instance[0]
    with engine.connect() as connection:
        node = connection.execute(sa.select(NODES).where(
            NODES.c.id == row.compute_node_id)).one()
    assert (entry["host"], entry["nodename"], entry["uuid"]) == (
        node.host, node.hypervisor_hostname, node.uuid)
    assert isinstance(entry["weight"], float)


def test_own_claim_reaches_the_cache_without_a_read(conf, mgr, engine):
    for name in ("a", "b"):
        add_node(engine, name)
    instance = uuids(1)
    entry, = mgr.select_destinations(spec(vcpus=2, ram=1024), instance)[0]
    cached = {host.host: host for host in mgr.host_manager.host_states()}
    refresh = mgr.host_manager.last_refresh
    assert (refresh.rows_fetched, refresh.allocations_read) == (0, 0)
    chosen = cached[entry["host"]]
    assert chosen.instances == set(instance)
    assert (chosen.vcpus_claimed, chosen.memory_mb_claimed) == (2, 1024)
    fresh = HostManager(conf).host_states()
    assert [host for host in fresh if host.host == entry["host"]] == [
        chosen]


def test_alternates_follow_the_chosen_host(conf, mgr, engine):
    for name, ram in (("a", 4096), ("b", 16384), ("c", 8192), ("d", 2048)):
        add_node(engine, name, memory_mb=ram)
    conf.set_override("weight_classes", ["RAMWeigher"],
                      group="filter_scheduler")
    result, = make_manager(conf).select_destinations(
        spec(), uuids(1), return_alternates=True)
    assert [e["host"] for e in result] == ["b", "c", "a"]
    assert result[0]["allocation_id"] is not None
    assert [e["allocation_id"] for e in result[1:]] == [None, None]
    assert result[0]["weight"] >= result[1]["weight"] >= result[2]["weight"]
    assert all(set(e) == ENTRY_KEYS for e in result)


def test_max_attempts_bounds_the_alternates(conf, engine):
    for name in "abcde":
        add_node(engine, name)
    conf.set_override("max_attempts", 2, group="filter_scheduler")
    result, = make_manager(conf).select_destinations(
        spec(), uuids(1), return_alternates=True)
    assert len(result) == 2


def test_multi_instance_reply_has_one_list_per_instance(mgr, engine):
    add_node(engine, "a", vcpus=2)
    add_node(engine, "b", vcpus=2)
    instances = uuids(4)
    result = mgr.select_destinations(spec(num_instances=4), instances,
                                     return_alternates=True)
    assert len(result) == 4
    assert sorted(r[0]["host"] for r in result) == ["a", "a", "b", "b"]
    by_instance = {row.instance_uuid: row.uuid for row in allocations(engine)}
    assert [by_instance[u] for u in instances] == [
        r[0]["allocation_id"] for r in result]


def test_without_instance_uuids_the_allocation_id_is_the_handle(mgr,
                                                                engine):
    add_node(engine, "a", vcpus=1)
    entry = mgr.select_destinations(spec())[0][0]
    row, = allocations(engine)
    assert row.instance_uuid == row.uuid == entry["allocation_id"]
    assert mgr.release(entry["allocation_id"]) is True
    assert allocations(engine) == []


def test_no_valid_host_summarises_why(mgr, engine):
    add_node(engine, "a", vcpus=1)
    add_node(engine, "b", vcpus=1, disabled=True)
    with pytest.raises(exception.NoValidHost) as error:
        mgr.select_destinations(spec(vcpus=2), uuids(1))
    assert str(error.value) == ("0/2 hosts available: 1 ComputeFilter "
                                "(disabled), 1 CoreFilter (insufficient "
                                "vCPUs)")
    assert mgr.stats.as_dict()["no_valid_host"] == 1


def test_explain_claims_nothing(mgr, engine):
    add_node(engine, "a")
    add_node(engine, "b", vcpus=1)
    result = mgr.explain(spec(vcpus=2))
    assert result["selected"] == ["a"]
    assert result["summary"] == ""
    assert {h["host"]: h["filtered_by"] for h in result["hosts"]} == {
        "a": None, "b": "CoreFilter"}
    assert allocations(engine) == []
    nothing = mgr.explain(spec(vcpus=3))
    assert nothing["selected"] == []
    assert nothing["summary"].startswith("0/2 hosts available")


# Idempotency and release


def test_retry_returns_the_same_claim(mgr, engine):
    for name in "abc":
        add_node(engine, name)
    instance = uuids(1)
    first = mgr.select_destinations(spec(), instance)[0][0]
    again = mgr.select_destinations(spec(), instance,
                                    return_alternates=True)[0][0]
    assert again["allocation_id"] == first["allocation_id"]
    assert (again["host"], again["uuid"]) == (first["host"], first["uuid"])
    assert len(allocations(engine)) == 1
    assert mgr.stats.as_dict()["idempotent"] == 1


def test_retry_with_room_left_gets_its_claim_and_fresh_alternates(
        conf, engine):
    conf.set_override("weight_classes", ["RAMWeigher"],
                      group="filter_scheduler")
    add_node(engine, "a", memory_mb=4096)
    add_node(engine, "b", memory_mb=10240)
    add_node(engine, "c", memory_mb=8192)
    mgr = make_manager(conf)
    instance = uuids(1)
    first = mgr.select_destinations(spec(ram=4096), instance)[0][0]
    assert first["host"] == "b"
    # Now "c" has the most free RAM: the retry's decision picks it, the
    # insert finds the claim on "b".
    again = mgr.select_destinations(spec(ram=4096), instance,
                                    return_alternates=True)[0]
    assert again[0]["allocation_id"] == first["allocation_id"]
    assert again[0]["host"] == "b"
    assert [e["host"] for e in again[1:]] == ["a"]
    assert len(allocations(engine)) == 1


def test_concurrent_duplicate_requests_share_one_claim(conf, engine):
    for name in "abcd":
        add_node(engine, name)
    instances = uuids(2)
    replies = []
    start = threading.Barrier(4)

    def worker(seed):
        mgr = make_manager(conf, seed=seed)
        start.wait()
        replies.append(mgr.select_destinations(spec(num_instances=2),
                                               instances))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(replies) == 4
    rows = allocations(engine)
    assert sorted(row.instance_uuid for row in rows) == sorted(instances)
    for reply in replies:
        assert {r[0]["allocation_id"] for r in reply} == {
            row.uuid for row in rows}


def test_retry_holds_even_when_the_fleet_is_full(mgr, engine):
    add_node(engine, "a", vcpus=1)
    instance = uuids(1)
    first = mgr.select_destinations(spec(), instance)[0][0]
    assert mgr.select_destinations(spec(), instance)[0][0] == {
        **first, "weight": None}


def test_retry_of_a_partly_claimed_request_claims_the_rest(mgr, engine):
    add_node(engine, "a", vcpus=3)
    instances = uuids(3)
    first = mgr.select_destinations(spec(), instances[:1])[0][0]
    result = mgr.select_destinations(spec(num_instances=3), instances)
    assert result[0][0]["allocation_id"] == first["allocation_id"]
    assert len({r[0]["allocation_id"] for r in result}) == 3
    assert len(allocations(engine)) == 3


def test_release_frees_capacity(mgr, engine):
    add_node(engine, "a", vcpus=1)
    instance = uuids(1)
    mgr.select_destinations(spec(), instance)
    with pytest.raises(exception.NoValidHost):
        mgr.select_destinations(spec(), uuids(1))
    assert mgr.release(instance[0]) is True
    assert mgr.release(instance[0]) is False
    assert mgr.select_destinations(spec(), uuids(1))[0][0]["host"] == "a"


@pytest.mark.parametrize("bad", ["abc", 5, None])
def test_release_validates_the_uuid(mgr, bad):
    with pytest.raises(exception.InvalidRequest, match="instance_uuid: "):
        mgr.release(bad)


# Multi-instance rollback


def test_multi_instance_failure_leaves_nothing_claimed(mgr, engine,
                                                       monkeypatch):
    add_node(engine, "a", vcpus=2)
    add_node(engine, "b", vcpus=2)
    # The decision believes all four fit; then a concurrent scheduler
    # fills the third instance's host: it goes to the alternate, and the
    # fourth instance finds both hosts full.
    real = claims.Claims.claim
    count = []

    def claim(self, node_id, *args, **kwargs):
        count.append(node_id)
        if len(count) == 3:
            fill_secretly(engine, node_id, 2)
        return real(self, node_id, *args, **kwargs)

    monkeypatch.setattr(claims.Claims, "claim", claim)
    conf = mgr.conf
    conf.set_override("max_claim_rounds", 1, group="scheduler")
    with pytest.raises(exception.NoValidHost, match="could not be claimed"):
        mgr.select_destinations(spec(num_instances=4), uuids(4))
    # Only the concurrent scheduler's claim remains.
    assert [row.vcpus for row in allocations(engine)] == [2]
    assert mgr.stats.as_dict()["rolled_back"] == 3


def test_multi_instance_rollback_keeps_earlier_claims(mgr, engine):
    add_node(engine, "a", vcpus=2)
    instances = uuids(3)
    held = mgr.select_destinations(spec(), instances[:1])[0][0]
    with pytest.raises(exception.NoValidHost):
        mgr.select_destinations(spec(num_instances=3), instances)
    row, = allocations(engine)
    assert (row.uuid, row.instance_uuid) == (held["allocation_id"],
                                             instances[0])


def test_database_error_mid_request_rolls_back(mgr, engine, monkeypatch):
    add_node(engine, "a", vcpus=4)
    real = claims.Claims.claim
    count = []

    def claim(self, *args, **kwargs):
        count.append(1)
        if len(count) == 2:
            raise sa_exc.OperationalError("INSERT", {}, Exception(
                "server closed the connection unexpectedly"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(claims.Claims, "claim", claim)
    with pytest.raises(claims.DatabaseError) as error:
        mgr.select_destinations(spec(num_instances=3), uuids(3))
    assert "select_destinations failed on a database error" in str(
        error.value)
    assert "server closed the connection unexpectedly" in str(error.value)
    assert allocations(engine) == []
    monkeypatch.setattr(claims.Claims, "claim", real)
    assert len(mgr.select_destinations(spec(num_instances=3),
                                       uuids(3))) == 3


def test_claim_applied_but_unconfirmed_is_rolled_back(mgr, engine,
                                                      monkeypatch):
    """The database applied the second claim, then the connection
    dropped before it said so: that claim is released with the first."""
    add_node(engine, "a", vcpus=4)
    real = claims.Claims.claim
    count = []

    def claim(self, *args, **kwargs):
        made = real(self, *args, **kwargs)
        count.append(1)
        if len(count) == 2:
            raise sa_exc.OperationalError("INSERT", {}, Exception(
                "server closed the connection unexpectedly"))
        return made

    monkeypatch.setattr(claims.Claims, "claim", claim)
    with pytest.raises(claims.DatabaseError):
        mgr.select_destinations(spec(num_instances=3), uuids(3))
    assert len(count) == 2
    assert allocations(engine) == []


def test_database_down_during_refresh_is_a_clear_error(mgr, engine,
                                                       monkeypatch):
    add_node(engine, "a")

    def down(*args, **kwargs):
        raise sa_exc.OperationalError("SELECT", {}, Exception("refused"))

    monkeypatch.setattr(mgr.host_manager, "host_states", down)
    with pytest.raises(claims.DatabaseError, match="unreachable.*refused"):
        mgr.select_destinations(spec(), uuids(1))
    monkeypatch.undo()
    assert mgr.select_destinations(spec(), uuids(1))
