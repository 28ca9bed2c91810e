"""The host cache's background full loads: the swap, failures, the thread.

Full loads are driven by hand (``HostManager.reload()``,
``Refresher.run_once()``) where the order of events matters, and by the
thread otherwise, waited for by its load counter, never by the clock.
"""

import threading

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler.conf import messaging as messaging_conf
from scheduler.db import host_queries
from scheduler.db import models
from scheduler.hosts.cache import refresher as host_cache_refresher
from scheduler.hosts.cache.manager import HostManager
from scheduler.rpc import server
from tests import fakes
from tests.unit.hosts.cache.fakes import NODES
from tests.unit.hosts.cache.fakes import SECOND
from tests.unit.hosts.cache.fakes import add_node
from tests.unit.hosts.cache.fakes import by_host
from tests.unit.hosts.cache.fakes import claim
from tests.unit.hosts.cache.fakes import update_node

WAIT = 60  # seconds: a bound for a hung thread, not a speed requirement


def refresher_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate()
            if thread.name == "host-cache-refresher"]


@pytest.fixture
def background(manager):
    """The manager with its refresher thread, stopped afterwards."""
    manager.start_background_refresh()
    yield manager
    manager.close()
    assert refresher_threads() == []


def during_full_read(monkeypatch, action) -> None:
    """Run ``action()`` once a full load has read nodes and claims, before
    it is swapped in."""
    real = host_queries.fetch
    done = []

    def fetch(connection, query, shape, **parameters):
        rows = real(connection, query, shape, **parameters)
        if shape is host_queries.AllocationRow and not parameters and not done:
            done.append(True)
            action()
        return rows

    monkeypatch.setattr(host_queries, "fetch", fetch)


def test_requests_during_a_reload_refresh_and_keep_what_they_read(
        engine, manager, monkeypatch):
    ids = [add_node(engine, f"h{i}", when=models.utcnow() - 10 * SECOND)
           for i in range(3)]
    manager.host_states()
    seen = []

    def request() -> None:
        # The reload holds no lock while it reads: this request refreshes
        # at once, and sees every host, in order, with the new claim.
        claim(engine, ids[1], vcpus=3)
        seen.append(manager.host_states())

    during_full_read(monkeypatch, request)
    manager.reload()

    assert [s.host for s in seen[0]] == ["h0", "h1", "h2"]
    assert by_host(seen[0])["h1"].vcpus_claimed == 3
    # The load read the node before the claim; the swap kept the newer.
    assert manager.last_refresh.full
    assert by_host(manager.host_states())["h1"].vcpus_claimed == 3
    assert not manager.last_refresh.full
    assert [s.vcpus_claimed for s in manager.host_states()] == [0, 3, 0]


def test_change_the_reload_saw_but_no_request_did_is_read_next(
        conf, engine, manager, monkeypatch):
    ids = [add_node(engine, f"h{i}", when=models.utcnow() - 10 * SECOND)
           for i in range(2)]
    manager.host_states()
    real = host_queries.fetch
    calls = []

    def fetch(connection, query, shape, **parameters):
        if shape is host_queries.NodeRow and not parameters and not calls:
            calls.append(True)
            # A request takes h0 in, then h0 changes again before the
            # load reads it: the swap keeps the request's older h0, and
            # the next refresh must still read the newer one.
            claim(engine, ids[0], vcpus=1)
            manager.host_states()
            claim(engine, ids[0], vcpus=2)
        return real(connection, query, shape, **parameters)

    monkeypatch.setattr(host_queries, "fetch", fetch)
    manager.reload()
    assert by_host(manager.host_states())["h0"].vcpus_claimed == 3


def test_reload_drops_deleted_nodes_even_if_requests_read_them(
        engine, manager, monkeypatch):
    keep = add_node(engine, "a")
    doomed = add_node(engine, "b")
    gone = add_node(engine, "c")
    manager.host_states()
    with engine.begin() as connection:
        connection.execute(NODES.delete().where(NODES.c.id == gone))
    real = host_queries.fetch
    calls = []

    def fetch(connection, query, shape, **parameters):
        if shape is host_queries.NodeRow and not parameters and not calls:
            calls.append(True)
            # Read by a request during the load, deleted before the load
            # reads the table.
            update_node(engine, doomed, vcpus=2)
            manager.host_states()
            with engine.begin() as connection_:
                connection_.execute(NODES.delete().where(
                    NODES.c.id == doomed))
        return real(connection, query, shape, **parameters)

    monkeypatch.setattr(host_queries, "fetch", fetch)
    manager.reload()
    assert [s.host for s in manager.host_states()] == ["a"]
    assert manager.host_states()[0].node_id == keep


def test_node_added_during_a_reload_stays(engine, manager, monkeypatch):
    add_node(engine, "a")
    manager.host_states()

    def request() -> None:
        add_node(engine, "b")
        manager.host_states()

    during_full_read(monkeypatch, request)
    manager.reload()
    assert [s.host for s in manager.host_states()] == ["a", "b"]


def test_reload_failure_keeps_the_table_and_is_retried(engine, manager):
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    refresher = host_cache_refresher.Refresher(manager)
    assert refresher.run_once()  # the first load
    before = manager.host_states()
    table = manager.host_table()
    with engine.begin() as connection:
        connection.execute(sa.text("ALTER TABLE allocations RENAME TO gone"))

    assert refresher.run_once() is False
    assert refresher.failures == 1 and refresher.loads == 1
    assert manager.host_states() == before
    assert manager.host_table() is table

    with engine.begin() as connection:
        connection.execute(sa.text("ALTER TABLE gone RENAME TO allocations"))
    claim(engine, node, vcpus=2)
    assert refresher.run_once()
    assert manager.last_refresh.full
    assert manager.host_states()[0].vcpus_claimed == 2


def test_failed_reload_leaves_requests_tracking_nothing(engine, manager):
    add_node(engine, "a")
    manager.host_states()
    with engine.begin() as connection:
        connection.execute(sa.text("ALTER TABLE compute_nodes RENAME TO x"))
    with pytest.raises(sa_exc.OperationalError):
        manager.reload()
    assert manager._touched is None


def test_thread_retries_a_failed_first_load(conf, engine, manager,
                                            monkeypatch):
    monkeypatch.setattr(host_cache_refresher, "FIRST_RETRY", 0.01)
    add_node(engine, "a")
    with engine.begin() as connection:
        connection.execute(sa.text("ALTER TABLE compute_nodes RENAME TO x"))
    manager.start_background_refresh()
    try:
        refresher = manager._refresher
        with refresher._done:
            assert refresher._done.wait_for(
                lambda: refresher.failures >= 2, WAIT)
        with engine.begin() as connection:
            connection.execute(sa.text(
                "ALTER TABLE x RENAME TO compute_nodes"))
        assert refresher.load_now(loads=1, timeout=WAIT)
        assert [s.host for s in manager.host_states()] == ["a"]
    finally:
        manager.close()


@pytest.fixture
def doomed(conf, engine, background):
    """Nodes a and b loaded by the thread, which loads again only when
    told to; the id of b, for the test to delete."""
    conf.set_override("full_refresh_interval", 3600,
                      group="filter_scheduler")
    add_node(engine, "a")
    node_id = add_node(engine, "b")
    assert background._refresher.load_now(timeout=WAIT)
    assert len(background.host_states()) == 2
    return node_id


def test_with_the_thread_requests_never_load_everything(
        engine, clock, background, doomed):
    refresher = background._refresher
    with engine.begin() as connection:
        connection.execute(NODES.delete().where(NODES.c.id == doomed))

    clock.now += 7200  # long past due: not the request's job
    assert len(background.host_states()) == 2
    assert not background.last_refresh.full

    assert refresher.load_now(timeout=WAIT)
    assert [s.host for s in background.host_states()] == ["a"]


def test_load_now_waits_for_a_load_that_began_after_it(
        engine, background, doomed, monkeypatch):
    # A load already reading when load_now() is called may have missed
    # what the caller just changed: the caller waits for the next one.
    refresher = background._refresher
    reading, release = threading.Event(), threading.Event()
    real_read = background._read

    def read_then_hold(*args, **kwargs):
        changes = real_read(*args, **kwargs)
        if not reading.is_set():
            reading.set()
            assert release.wait(WAIT)
        return changes

    monkeypatch.setattr(background, "_read", read_then_hold)
    refresher._wake.set()
    assert reading.wait(WAIT)
    with engine.begin() as connection:
        connection.execute(NODES.delete().where(NODES.c.id == doomed))
    waited = []
    caller = threading.Thread(
        target=lambda: waited.append(refresher.load_now(timeout=WAIT)))
    caller.start()
    # load_now() sets the wake-up only once it knows what it waits for
    # (the thread cleared it before the held load began).
    assert refresher._wake.wait(WAIT)
    release.set()
    caller.join(WAIT)
    assert waited == [True]
    assert [s.host for s in background.host_states()] == ["a"]


def test_load_now_on_a_stopped_refresher_returns_at_once(
        engine, background):
    refresher = background._refresher
    refresher.stop()
    waited = []
    caller = threading.Thread(
        target=lambda: waited.append(refresher.load_now()))
    caller.start()
    caller.join(WAIT)
    assert waited == [False]


def test_requests_see_a_consistent_table_while_the_thread_reloads(
        conf, engine, background):
    ids = [add_node(engine, f"h{i:02d}") for i in range(20)]
    expected = [f"h{i:02d}" for i in range(20)]
    refresher = background._refresher

    def read() -> None:
        table = background.host_table()
        assert [s.host for s in table.hosts] == expected
        assert list(table.attribute("vcpus_claimed")) == [
            s.vcpus_claimed for s in table.hosts]

    with fakes.reading_threads(read, 3, timeout=WAIT):
        for round_ in range(20):
            claim(engine, ids[round_ % 20], vcpus=1)
            if round_ % 5 == 0:
                assert refresher.load_now(timeout=WAIT)
    assert sum(s.vcpus_claimed for s in background.host_states()) == 20


def test_close_stops_the_thread_and_requests_load_again(
        conf, engine, clock, manager):
    conf.set_override("full_refresh_interval", 1, group="filter_scheduler")
    add_node(engine, "a")
    manager.start_background_refresh()
    manager.host_states()
    manager.close()
    assert refresher_threads() == []
    clock.now += 2
    manager.host_states()
    assert manager.last_refresh.full


def test_a_forked_child_loads_on_the_request_path(conf, engine, clock,
                                                 background, monkeypatch):
    conf.set_override("full_refresh_interval", 1, group="filter_scheduler")
    add_node(engine, "a")
    assert background._refresher.load_now(loads=1, timeout=WAIT)
    # The thread does not exist in a child of a fork: its process id says
    # so, and the cache does its own full loads there.
    monkeypatch.setattr(host_cache_refresher.os, "getpid", lambda: -1)
    assert not background._refresher.alive
    clock.now += 2
    background.host_states()
    assert background.last_refresh.full


def test_worker_starts_the_refresher_and_stops_it(conf, engine, manager,
                                                  monkeypatch):
    class Manager:
        host_manager = manager

        def resume_releases(self) -> int:
            return 0

    # Only the refresher matters here, not the broker.
    messaging_conf.register_messaging_opts(conf)
    monkeypatch.setattr(server, "SchedulerRPCService",
                        lambda conf, manager, command_line: FakeService())
    worker = server.SchedulerWorker(conf, manager_factory=lambda c: Manager())
    worker.start()
    assert manager._refresher is not None and manager._refresher.alive
    worker.stop()
    assert manager._refresher is None
    assert refresher_threads() == []


class FakeService:
    def periodic_balancer(self) -> None:
        return None

    def start(self) -> bool:
        return True

    def stop(self) -> None:
        pass


def test_paced_reload_reads_what_a_full_load_reads(conf, engine, manager,
                                                   monkeypatch):
    monkeypatch.setattr(host_queries, "PACE_ROWS", 2)
    ids = [add_node(engine, f"h{i}") for i in range(5)]
    manager.host_states()
    for node_id in ids[:3]:
        claim(engine, node_id, vcpus=2)
    update_node(engine, ids[4], host="a")
    paces = []
    manager.reload(pace=lambda: paces.append(True))
    assert len(paces) >= 5
    fresh = HostManager(conf).host_states()
    assert [(s.host, s.vcpus_claimed) for s in manager.host_states()] == [
        (s.host, s.vcpus_claimed) for s in fresh]


def test_stop_abandons_a_paced_reload(engine, manager):
    add_node(engine, "a")
    refresher = host_cache_refresher.Refresher(manager)
    assert refresher.run_once()
    table = manager.host_table()
    refresher._stop.set()
    assert refresher.run_once() is False
    assert refresher.failures == 0
    assert manager._touched is None
    assert manager.host_table() is table


def test_full_loads_hand_free_memory_back_and_refreshes_do_not(
        engine, manager, clock, monkeypatch):
    from scheduler.hosts.cache import manager as manager_mod
    released = []
    monkeypatch.setattr(manager_mod.heap, "release_free_memory",
                        lambda: released.append(1) or True)
    node = add_node(engine, "a")
    manager.host_states()  # the first load
    assert len(released) == 1
    update_node(engine, node, vcpus=8)
    clock.now += 1.0
    assert manager.host_states()[0].vcpus == 8  # incremental
    assert len(released) == 1
    manager.reload()
    assert len(released) == 2
