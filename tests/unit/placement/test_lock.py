"""scheduler.placement.lock: the cluster lock mode ([scheduler]
cluster_lock, lock_hold_timeout), through SchedulerManager over SQLite."""

import logging
import threading
import time

import pytest

from scheduler import exception
from scheduler.db import locks
from scheduler.placement.errors import LockHoldTimeout
from tests.fakes import add_node
from tests.fakes import allocations
from tests.fakes import make_manager
from tests.fakes import spec
from tests.fakes import uuids


def test_cluster_lock_serialises_per_cluster(conf, engine):
    add_node(engine, "a", cluster="c1")
    add_node(engine, "b", cluster="c2")
    conf.set_override("cluster_lock", True, group="scheduler")
    conf.set_override("lock_acquire_timeout", 0.2, group="scheduler")
    mgr = make_manager(conf)
    assert mgr.select_destinations(spec(cluster="c1"),
                                   uuids(1))[0][0]["host"] == "a"
    with locks.database_lock(engine, "cluster:c1", 1):
        started = time.monotonic()
        with pytest.raises(locks.LockTimeout, match="cluster:c1"):
            mgr.select_destinations(spec(cluster="c1"), uuids(1))
        assert time.monotonic() - started >= 0.2
        # Other clusters are not held up.
        assert mgr.select_destinations(spec(cluster="c2"),
                                       uuids(1))[0][0]["host"] == "b"
    assert len(allocations(engine)) == 2
    assert mgr.select_destinations(spec(cluster="c1"), uuids(1))


def test_cluster_lock_without_cluster_uses_the_dash_lock(conf, engine):
    add_node(engine, "a")
    conf.set_override("cluster_lock", True, group="scheduler")
    conf.set_override("lock_acquire_timeout", 0.1, group="scheduler")
    mgr = make_manager(conf)
    with locks.database_lock(engine, "cluster:-", 1), \
            pytest.raises(locks.LockTimeout, match="cluster:-"):
        mgr.select_destinations(spec(), uuids(1))
    assert mgr.select_destinations(spec(), uuids(1))


def test_cluster_lock_waits_for_the_holder(conf, engine):
    add_node(engine, "a")
    conf.set_override("cluster_lock", True, group="scheduler")
    mgr = make_manager(conf)
    held = threading.Event()

    def holder():
        with locks.database_lock(engine, "cluster:c1", 1):
            held.set()
            time.sleep(0.3)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait()
    started = time.monotonic()
    assert mgr.select_destinations(spec(cluster="c1"), uuids(1))
    assert time.monotonic() - started >= 0.2
    thread.join()


def test_lock_hold_timeout_stops_the_pass(conf, engine, monkeypatch,
                                          caplog):
    add_node(engine, "a", vcpus=4)
    conf.set_override("cluster_lock", True, group="scheduler")
    conf.set_override("lock_hold_timeout", 0.1, group="scheduler")
    mgr = make_manager(conf)
    real = mgr.claims.claim
    calls = []

    def slow_claim(*args, **kwargs):
        calls.append(1)
        time.sleep(0.15)
        return real(*args, **kwargs)

    monkeypatch.setattr(mgr.claims, "claim", slow_claim)
    with caplog.at_level(logging.WARNING, logger="scheduler.manager"), \
            pytest.raises(LockHoldTimeout) as error:
        mgr.select_destinations(spec(num_instances=3), uuids(3))
    assert isinstance(error.value, exception.NoValidHost)
    assert "lock_hold_timeout (0.1 s)" in str(error.value)
    assert "lock_hold_timeout" in caplog.text
    # It stopped before the second claim and undid the first.
    assert len(calls) == 1
    assert allocations(engine) == []
    # The lock was released: another pass takes it at once.
    monkeypatch.setattr(mgr.claims, "claim", real)
    conf.set_override("lock_acquire_timeout", 0.1, group="scheduler")
    assert len(mgr.select_destinations(spec(num_instances=3),
                                       uuids(3))) == 3


def test_pass_finishing_after_the_hold_limit_keeps_its_claim(
        conf, engine, monkeypatch, caplog):
    add_node(engine, "a")
    conf.set_override("cluster_lock", True, group="scheduler")
    # The limit must pass during the claim, not before it: a refresh on
    # a loaded machine can take a good part of a tenth of a second.
    conf.set_override("lock_hold_timeout", 0.5, group="scheduler")
    mgr = make_manager(conf)
    real = mgr.claims.claim

    def slow_claim(*args, **kwargs):
        time.sleep(0.6)
        return real(*args, **kwargs)

    monkeypatch.setattr(mgr.claims, "claim", slow_claim)
    with caplog.at_level(logging.WARNING, logger="scheduler.manager"):
        assert mgr.select_destinations(spec(), uuids(1))
    assert "kept its claims" in caplog.text
    assert len(allocations(engine)) == 1
