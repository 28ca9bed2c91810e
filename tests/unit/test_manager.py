"""SchedulerManager, the façade: reply shape, claims, retries, rollback,
options, over SQLite. Request validation is tested in
request/test_validation.py, the cluster lock in placement/test_lock.py,
the pending-claims wait in placement/test_pending.py."""

import threading
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler import claims
from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler.conf import opts as scheduler_opts
from scheduler.db import models
from scheduler.hosts.cache.manager import HostManager
from tests.fakes import NODES
from tests.fakes import add_node
from tests.fakes import allocations
from tests.fakes import fill_secretly
from tests.fakes import make_manager
from tests.fakes import spec
from tests.fakes import used_vcpus
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


# Conflicts


def test_conflict_moves_on_to_the_alternate(conf, engine):
    conf.set_override("weight_classes", ["RAMWeigher"],
                      group="filter_scheduler")
    best = add_node(engine, "a", memory_mb=16384)
    add_node(engine, "b")
    add_node(engine, "c", memory_mb=4096)
    mgr = make_manager(conf)
    mgr.host_manager.host_states()
    fill_secretly(engine, best, 2)
    result, = mgr.select_destinations(spec(), uuids(1),
                                      return_alternates=True)
    assert [e["host"] for e in result] == ["b", "c"]
    stats = mgr.stats.as_dict()
    assert (stats["conflicts"], stats["redecisions"]) == (1, 0)
    assert used_vcpus(engine) == {"a": 2, "b": 1}


def test_all_candidates_taken_means_a_new_decision(conf, engine,
                                                   monkeypatch):
    conf.set_override("max_attempts", 1, group="filter_scheduler")
    conf.set_override("weight_classes", ["RAMWeigher"],
                      group="filter_scheduler")
    best = add_node(engine, "a", memory_mb=16384)
    add_node(engine, "b")
    mgr = make_manager(conf)
    stale = mgr.host_manager.host_states()
    # A concurrent scheduler fills "a" (bumping it, as claims do) after
    # this one read its cache.
    claims.Claims(conf).claim(best, str(uuid.uuid4()),
                              claims.Usage(2, 0, 0))
    real = mgr.host_manager.host_states
    calls = []

    def host_states(now=None):
        calls.append(1)
        return stale if len(calls) == 1 else real()

    monkeypatch.setattr(mgr.host_manager, "host_states", host_states)
    result, = mgr.select_destinations(spec(), uuids(1))
    assert result[0]["host"] == "b"
    stats = mgr.stats.as_dict()
    assert (stats["conflicts"], stats["redecisions"]) == (1, 1)


def test_decision_rounds_are_bounded(conf, engine, monkeypatch):
    conf.set_override("max_claim_rounds", 3, group="scheduler")
    node = add_node(engine, "a")
    mgr = make_manager(conf)
    stale = mgr.host_manager.host_states()
    fill_secretly(engine, node, 2)
    monkeypatch.setattr(mgr.host_manager, "host_states",
                        lambda now=None: stale)
    with pytest.raises(exception.NoValidHost) as error:
        mgr.select_destinations(spec(), uuids(1))
    assert str(error.value).startswith(
        "1 instance(s) could not be claimed in 3 decision round(s)")
    assert "(last ones: a, a, a)" in str(error.value)
    assert mgr.stats.as_dict()["conflicts"] == 3


def test_a_node_found_full_is_skipped_while_the_cache_lags(conf, engine,
                                                          monkeypatch):
    """A claim committed late reaches the host cache only at its next
    overlap-window check; meanwhile the request's next decision leaves
    out the node its claim found full instead of choosing it again."""
    conf.set_override("max_attempts", 1, group="filter_scheduler")
    conf.set_override("weight_classes", ["RAMWeigher"],
                      group="filter_scheduler")
    best = add_node(engine, "a", memory_mb=16384)
    add_node(engine, "b")
    mgr = make_manager(conf)
    stale = mgr.host_manager.host_states()
    fill_secretly(engine, best, 2)
    monkeypatch.setattr(mgr.host_manager, "host_states",
                        lambda now=None: stale)
    result, = mgr.select_destinations(spec(), uuids(1))
    assert result[0]["host"] == "b"
    stats = mgr.stats.as_dict()
    assert (stats["conflicts"], stats["redecisions"]) == (1, 1)


def test_concurrent_threads_never_overfill(conf, engine):
    for name in "abc":
        add_node(engine, name, vcpus=4)
    conf.set_override("host_subset_size", 3, group="filter_scheduler")
    mgr = make_manager(conf)
    outcomes = []
    start = threading.Barrier(8)

    def worker():
        start.wait()
        for _ in range(3):
            try:
                mgr.select_destinations(spec(), uuids(1))
                outcomes.append("ok")
            except exception.NoValidHost:
                outcomes.append("full")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("ok") == 12
    assert outcomes.count("full") == 12
    assert used_vcpus(engine) == {"a": 4, "b": 4, "c": 4}


# [scheduler] options


def test_scheduler_options_and_defaults(conf):
    opts = conf.scheduler
    # workers unset: one per CPU (scheduler.cmd.service.configured_workers).
    assert (opts.workers, opts.cluster_lock, opts.lock_acquire_timeout,
            opts.lock_hold_timeout, opts.pending_retry_timeout,
            opts.max_claim_rounds) == (None, False, 30.0, 60.0, 0.0, 10)
    # The group is listed in parts (the cluster policy options are
    # another); the service's own come in this order.
    listed = [opt.name for group, group_opts in scheduler_opts.list_opts()
              if getattr(group, "name", group) == "scheduler"
              for opt in group_opts]
    service_opts = ["workers", "max_claim_rounds", "cluster_lock",
                    "lock_acquire_timeout", "lock_hold_timeout",
                    "pending_retry_timeout"]
    assert [name for name in listed if name in service_opts] == service_opts
    for opt in scheduler_conf.scheduler.scheduler_opts:
        assert opt.help


@pytest.mark.parametrize("name, value", [
    ("workers", 0), ("max_claim_rounds", 0), ("lock_acquire_timeout", 0),
    ("lock_hold_timeout", -1), ("pending_retry_timeout", -1)])
def test_scheduler_options_are_bounded(conf, name, value):
    with pytest.raises(ValueError):
        conf.set_override(name, value, group="scheduler")


# Releases deferred while the database is unreachable


def test_rollback_the_database_refused_is_retried_until_done(
        mgr, engine, monkeypatch):
    """The database goes away mid-request: the claims already made cannot
    be undone then, and are released in the background once it is back,
    so that nothing half-claimed remains."""
    add_node(engine, "a", vcpus=4)
    real_claim = claims.Claims.claim
    real_release = claims.Claims.release_allocation
    database_up = threading.Event()
    count = []

    def claim(self, *args, **kwargs):
        count.append(1)
        if len(count) == 3:
            raise sa_exc.OperationalError("INSERT", {}, Exception(
                "server closed the connection unexpectedly"))
        return real_claim(self, *args, **kwargs)

    def release_allocation(self, allocation_id, made_before=None):
        if not database_up.is_set():
            raise sa_exc.OperationalError("DELETE", {}, Exception(
                "connection refused"))
        return real_release(self, allocation_id, made_before)

    monkeypatch.setattr(claims.Claims, "claim", claim)
    monkeypatch.setattr(claims.Claims, "release_allocation",
                        release_allocation)
    mgr.deferred_releases.interval = 0.01
    with pytest.raises(claims.DatabaseError):
        mgr.select_destinations(spec(num_instances=3), uuids(3))
    # The two claims made, and the third, which the database may have
    # applied before the connection dropped.
    assert len(mgr.deferred_releases.pending()) == 3
    assert len(allocations(engine)) == 2
    database_up.set()
    assert mgr.deferred_releases.wait_until_done(10)
    assert allocations(engine) == []
    assert mgr.deferred_releases.released == 3


def test_a_claim_handed_back_by_a_retry_is_not_released(mgr, engine):
    add_node(engine, "a", vcpus=4)
    instance = uuids(1)
    held = mgr.select_destinations(spec(), instance)[0][0]
    # As if a failed request had left it, its release still pending; the
    # thread that would release it is not started.
    mgr.deferred_releases._pending[held["allocation_id"]] = claims.Claim(
        held["allocation_id"], instance[0], 0, held["uuid"], held["host"],
        held["nodename"], 1, 512, 1)
    again = mgr.select_destinations(spec(), instance)[0][0]
    assert again["allocation_id"] == held["allocation_id"]
    assert mgr.deferred_releases.pending() == []
    assert len(allocations(engine)) == 1


def test_a_claim_released_as_its_retry_finds_it_is_claimed_again(
        mgr, engine, monkeypatch):
    # A failed request's claim awaits release in the background; its
    # retry finds the claim, and the release runs right then: the retry
    # must not answer with the freed claim, but claim the node anew.
    add_node(engine, "a", vcpus=4)
    instance = uuids(1)
    held = mgr.select_destinations(spec(), instance)[0][0]
    mgr.deferred_releases._pending[held["allocation_id"]] = claims.Claim(
        held["allocation_id"], instance[0], 0, held["uuid"], held["host"],
        held["nodename"], 1, 512, 1)
    real_claim = claims.Claims.claim

    def claim_then_release(self, *args, **kwargs):
        found = real_claim(self, *args, **kwargs)
        if found.existing:
            mgr.deferred_releases._run()
        return found

    monkeypatch.setattr(claims.Claims, "claim", claim_then_release)
    again = mgr.select_destinations(spec(), instance)[0][0]
    assert mgr.deferred_releases.released == 1
    assert again["allocation_id"] != held["allocation_id"]
    assert len(allocations(engine)) == 1
    assert mgr.deferred_releases.cancel(again["allocation_id"])
    assert not mgr.deferred_releases.cancel(held["allocation_id"])


def test_a_claim_taken_over_by_a_retry_survives_another_workers_release(
        mgr, engine, conf):
    # A failed request left its claim for release in one worker; its
    # retry reached another worker, which hands the claim out. The first
    # worker's release, running later, must spare it.
    add_node(engine, "a", vcpus=4)
    instance = uuids(1)
    held = mgr.select_destinations(spec(), instance)[0][0]
    other_worker = claims.DeferredReleases(claims.Claims(conf))
    # Its releasing thread is not started: it runs below, late.
    other_worker._pending[held["allocation_id"]] = claims.Claim(
        held["allocation_id"], instance[0], 0, held["uuid"], held["host"],
        held["nodename"], 1, 512, 1, deferred_at=models.utcnow())
    again = mgr.select_destinations(spec(), instance)[0][0]
    assert again["allocation_id"] == held["allocation_id"]
    other_worker._run()
    assert len(allocations(engine)) == 1
    # A release given up after the take-over still frees it.
    assert mgr.release(instance[0])
    assert allocations(engine) == []


# Cluster policies and balancing


def test_the_request_cluster_picks_its_policy(conf, engine):
    conf.set_override("weight_classes", ["RAMWeigher"],
                      group="filter_scheduler")
    conf.set_override("cluster_policies", {"packed": "power_saving"},
                      group="scheduler")
    add_node(engine, "roomy", vcpus=8, memory_mb=16384, cluster="packed")
    add_node(engine, "tight", vcpus=8, memory_mb=4096, cluster="packed")
    mgr = make_manager(conf)
    # power_saving packs (RAMWeigher:-1, CPUWeigher:-1 ...): the fullest
    # host that fits.
    assert mgr.explain(spec(cluster="packed"))["selected"][0] == "tight"
    packed, = mgr.select_destinations(spec(cluster="packed"), uuids(1))
    assert packed[0]["host"] == "tight"
    # Without a cluster, [filter_scheduler] spreads: the roomiest host.
    spread, = mgr.select_destinations(spec(), uuids(1))
    assert spread[0]["host"] == "roomy"


def test_balance_plans_nothing_without_a_balancer(mgr, engine):
    add_node(engine, "a")
    assert mgr.balance() == []
    assert mgr.balance("c1", dry_run=True) == []


def test_balance_database_error_is_clear(mgr, monkeypatch):
    def broken(cluster, dry_run, migration_policy):
        raise sa_exc.OperationalError("SELECT", {}, Exception("gone"))

    monkeypatch.setattr(mgr.planner, "balance", broken)
    with pytest.raises(claims.DatabaseError,
                       match="balance failed on a database error"):
        mgr.balance()
