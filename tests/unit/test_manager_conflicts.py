"""SchedulerManager: claim conflicts, [scheduler] options, releases
deferred while the database is unreachable, cluster policies and
balancing."""

import threading
import uuid

import pytest
from sqlalchemy import exc as sa_exc

from scheduler import claims
from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler.conf import opts as scheduler_opts
from scheduler.db import models
from tests.fakes import add_node
from tests.fakes import allocations
from tests.fakes import fill_secretly
from tests.fakes import make_manager
from tests.fakes import spec
from tests.fakes import used_vcpus
from tests.fakes import uuids

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
