"""scheduler.placement.pending: waiting for pending claims ([scheduler]
pending_retry_timeout), through SchedulerManager over SQLite."""

import datetime
import threading
import time

import pytest

from scheduler import exception
from scheduler.db import locks
from scheduler.db import models
from scheduler.placement import rounds
from tests.fakes import NODES
from tests.fakes import add_node
from tests.fakes import spec
from tests.fakes import uuids


def pending_fleet(mgr, engine, count=2) -> list[str]:
    """One host, full of claims newer than its last report."""
    add_node(engine, "a", vcpus=count, reported=models.utcnow()
             - datetime.timedelta(minutes=1))
    held = uuids(count)
    mgr.select_destinations(spec(num_instances=count), held)
    return held


def test_pending_claims_make_the_request_wait(conf, mgr, engine):
    conf.set_override("pending_retry_timeout", 5, group="scheduler")
    held = pending_fleet(mgr, engine)

    def release_later():
        time.sleep(0.3)
        mgr.release(held[0])

    thread = threading.Thread(target=release_later)
    thread.start()
    started = time.monotonic()
    result = mgr.select_destinations(spec(), uuids(1))
    waited = time.monotonic() - started
    thread.join()
    assert result[0][0]["host"] == "a"
    assert 0.3 <= waited < 3
    assert mgr.stats.as_dict()["pending_waits"] >= 1


def test_pending_wait_ends_with_no_valid_host(conf, mgr, engine):
    conf.set_override("pending_retry_timeout", 0.6, group="scheduler")
    pending_fleet(mgr, engine)
    started = time.monotonic()
    with pytest.raises(exception.NoValidHost, match="CoreFilter"):
        mgr.select_destinations(spec(), uuids(1))
    assert 0.6 <= time.monotonic() - started < 2


def test_no_wait_without_pending_claims(conf, mgr, engine):
    conf.set_override("pending_retry_timeout", 5, group="scheduler")
    node = add_node(engine, "a", vcpus=1)
    mgr.select_destinations(spec(), uuids(1))
    # The node's report now includes the claim: nothing is pending.
    with engine.begin() as connection:
        connection.execute(NODES.update().where(NODES.c.id == node).values(
            metrics_updated_at=models.utcnow(),
            changed_at=models.utcnow()))
    started = time.monotonic()
    with pytest.raises(exception.NoValidHost):
        mgr.select_destinations(spec(), uuids(1))
    assert time.monotonic() - started < 0.5
    assert mgr.stats.as_dict()["pending_waits"] == 0


def test_pending_claims_elsewhere_do_not_make_it_wait(conf, mgr, engine):
    conf.set_override("pending_retry_timeout", 5, group="scheduler")
    pending_fleet(mgr, engine)
    add_node(engine, "b", vcpus=1, cluster="c2",
             reported=models.utcnow() + datetime.timedelta(minutes=1))
    mgr.select_destinations(spec(cluster="c2"), uuids(1))
    started = time.monotonic()
    with pytest.raises(exception.NoValidHost):
        mgr.select_destinations(spec(cluster="c2"), uuids(1))
    assert time.monotonic() - started < 0.5


def test_pending_wait_does_not_hold_the_cluster_lock(conf, mgr, engine):
    conf.set_override("pending_retry_timeout", 5, group="scheduler")
    conf.set_override("cluster_lock", True, group="scheduler")
    held = pending_fleet(mgr, engine)
    done = []

    def waiter():
        done.append(mgr.select_destinations(spec(cluster="c1"), uuids(1)))

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.2)
    # The waiting request does not hold cluster:c1 while it sleeps.
    with locks.database_lock(engine, "cluster:c1", 0.5):
        pass
    mgr.release(held[1])
    thread.join(5)
    assert done and done[0][0][0]["host"] == "a"


def test_without_a_wait_a_refusal_does_not_read_every_hosts_state(
        conf, mgr, engine, monkeypatch):
    # [scheduler] pending_retry_timeout 0 (the default): whether claims
    # are pending changes nothing, and finding out builds every host's
    # state, on every refusal of a full region.
    pending_fleet(mgr, engine)

    def looked_at(*_args):
        raise AssertionError("pending claims looked for")

    monkeypatch.setattr(rounds, "pending_in_cluster", looked_at)
    with pytest.raises(exception.NoValidHost, match="CoreFilter"):
        mgr.select_destinations(spec(), uuids(1))
    assert mgr.stats.as_dict()["no_valid_host"] == 1
