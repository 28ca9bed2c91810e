"""Concurrent workers never place more on a host than it holds
(docs/architecture.md).

A fleet with room for exactly 300 one-vCPU instances (30 hosts x 10 vCPUs,
cpu_allocation_ratio 1.0, RAM and disk plentiful) and 4 worker processes,
each with its own SchedulerManager and host cache on the same database,
issuing 400 select_destinations calls at once from several threads each.
Exactly 300 succeed, exactly 100 get NoValidHost, and the database shows
no host over capacity and no instance with two claims.

``host_subset_size`` > 1 makes the workers' choices overlap less
predictably, which is how real deployments collide. With ``[scheduler]
cluster_lock`` the passes run one at a time across the processes, each
seeing the claims of the one before: the same outcome without a single
conflict.
"""

import multiprocessing
import queue
import threading
import time
import traceback
import uuid

import pytest
import sqlalchemy as sa

from scheduler import exception
from scheduler import manager
from scheduler.db import api as db_api
from scheduler.db import models
from tests.functional.claims_harness import claims_config
from tests.functional.claims_harness import one_node
from tests.functional.fault_harness import ALLOCATIONS
from tests.functional.fault_harness import CAPACITY
from tests.functional.fault_harness import NODES
from tests.functional.fault_harness import make_fleet

PROCESSES = 4
THREADS_PER_PROCESS = 5
CALLS_PER_PROCESS = 100
# Spawned interpreters import oslo and the plugins before the start.
_START_TIMEOUT = 60
_RUN_TIMEOUT = 120


def _worker(url: str, cluster_lock: bool, index: int,
            start: multiprocessing.Barrier,
            results: multiprocessing.Queue) -> None:
    """One scheduler worker process: its own manager and host cache."""
    try:
        mgr = manager.SchedulerManager(claims_config(url, cluster_lock))
        mgr.host_manager.host_states()
    except BaseException:
        results.put({"index": index, "fatal": traceback.format_exc()})
        start.abort()
        return
    placed: list[tuple[str, str, str]] = []
    refused: list[str] = []
    errors: list[str] = []
    lock = threading.Lock()
    request = {"flavor": {"name": "tiny", "vcpus": 1, "memory_mb": 64,
                          "root_gb": 1}}

    def calls(count: int) -> None:
        for _ in range(count):
            instance = str(uuid.uuid4())
            try:
                entry = mgr.select_destinations(request, [instance])[0][0]
            except exception.NoValidHost as e:
                with lock:
                    refused.append(str(e))
            except Exception:
                with lock:
                    errors.append(traceback.format_exc())
            else:
                with lock:
                    placed.append((instance, entry["allocation_id"],
                                   entry["host"]))

    per_thread = CALLS_PER_PROCESS // THREADS_PER_PROCESS
    threads = [threading.Thread(target=calls, args=(per_thread,))
               for _ in range(THREADS_PER_PROCESS)]
    start.wait(_START_TIMEOUT)
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put({"index": index, "placed": placed, "refused": refused,
                 "errors": errors, "stats": mgr.stats.as_dict(),
                 "duration": time.monotonic() - began})
    db_api.dispose_engines()


def _run_workers(url: str, cluster_lock: bool
                 ) -> tuple[list[dict], float]:
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(PROCESSES + 1)
    results = context.Queue()
    processes = [context.Process(target=_worker,
                                 args=(url, cluster_lock, i, start,
                                       results))
                 for i in range(PROCESSES)]
    for process in processes:
        process.start()
    try:
        start.wait(_START_TIMEOUT)
        began = time.monotonic()
        reports = []
        # Read before joining: a child blocks on exit until its queued
        # report is consumed.
        for _ in processes:
            try:
                reports.append(results.get(timeout=_RUN_TIMEOUT))
            except queue.Empty:
                pytest.fail("a worker process sent no report in "
                            f"{_RUN_TIMEOUT}s")
        duration = time.monotonic() - began
    except threading.BrokenBarrierError:
        reports = [results.get(timeout=5) for _ in processes
                   if not results.empty()]
        pytest.fail(f"a worker failed to start: {reports}")
    finally:
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.kill()
                process.join()
    fatal = [r["fatal"] for r in reports if "fatal" in r]
    assert not fatal, fatal[0]
    return reports, duration


@pytest.mark.parametrize("cluster_lock", [False, True],
                         ids=["claims", "cluster_lock"])
@pytest.mark.parametrize("db_url", ["postgresql", "mysql", "sqlite"],
                         indirect=True)
def test_workers_never_overcommit(db_url, cluster_lock):
    make_fleet(db_url)

    reports, duration = _run_workers(db_url, cluster_lock)

    placed = [p for r in reports for p in r["placed"]]
    refused = [m for r in reports for m in r["refused"]]
    errors = [e for r in reports for e in r["errors"]]
    stats = {key: sum(r["stats"][key] for r in reports)
             for key in reports[0]["stats"]}
    print(f"\nrace backend={sa.engine.make_url(db_url).get_backend_name()} "
          f"cluster_lock={cluster_lock} processes={PROCESSES} "
          f"threads={PROCESSES * THREADS_PER_PROCESS} "
          f"calls={PROCESSES * CALLS_PER_PROCESS} successes={len(placed)} "
          f"no_valid_host={len(refused)} errors={len(errors)} "
          f"conflicts={stats['conflicts']} "
          f"redecisions={stats['redecisions']} duration_s={duration:.2f}")
    assert not errors, errors[0]
    assert len(placed) == CAPACITY
    assert len(refused) == PROCESSES * CALLS_PER_PROCESS - CAPACITY
    # Each refusal is the filters' verdict on a full fleet.
    odd = [m for m in refused if "CoreFilter (insufficient vCPUs)" not in m]
    assert odd == [], odd[:3]
    if cluster_lock:
        # Each pass saw every claim made before it.
        assert stats["conflicts"] == 0

    engine = db_api.get_engine(claims_config(db_url))
    with engine.connect() as connection:
        usage = connection.execute(
            sa.select(NODES.c.host, NODES.c.vcpus,
                      NODES.c.cpu_allocation_ratio,
                      sa.func.coalesce(sa.func.sum(ALLOCATIONS.c.vcpus), 0))
            .join_from(NODES, ALLOCATIONS, isouter=True)
            .group_by(NODES.c.id, NODES.c.host, NODES.c.vcpus,
                      NODES.c.cpu_allocation_ratio)).all()
        doubles = connection.execute(
            sa.select(ALLOCATIONS.c.instance_uuid)
            .group_by(ALLOCATIONS.c.instance_uuid)
            .having(sa.func.count() > 1)).all()
        rows = connection.execute(
            sa.select(ALLOCATIONS.c.instance_uuid, ALLOCATIONS.c.uuid,
                      NODES.c.host)
            .join_from(ALLOCATIONS, NODES)).all()
    over = [(host, used) for host, vcpus, ratio, used in usage
            if used > vcpus * ratio]
    assert over == []
    assert sum(used for *_, used in usage) == CAPACITY
    assert doubles == []
    # Every reply matches the claim in the database, and nothing else is
    # claimed.
    assert sorted(map(tuple, rows)) == sorted(placed)


def _wait_for_lock_waiter(engine, timeout: float = 10.0) -> None:
    """Until some session waits for a row lock (the claim under test)."""
    deadline = time.monotonic() + timeout
    with engine.connect() as connection:
        while time.monotonic() < deadline:
            waiting = connection.execute(sa.text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()")).scalar_one()
            if waiting:
                return
            connection.rollback()
            time.sleep(0.01)
    pytest.fail("the claim never waited for the node's row lock")


@pytest.mark.parametrize("taken, outcome", [(2, "conflict"), (1, "claimed")],
                         ids=["filled", "room-left"])
def test_claim_racing_a_committing_claim_on_postgresql(postgresql_url,
                                                      taken, outcome):
    """The one-statement claim reads the node before waiting for the row
    lock of a claim in progress; once that one commits, the statement
    must not act on what it read: it sees the generation moved and the
    claim is decided again under the lock (refused when the other claim
    filled the node, made when room is left)."""
    from scheduler import claims

    conf, engine, node = one_node(
        postgresql_url, vcpus=2, memory_mb=4096, cpu_allocation_ratio=1.0,
        ram_allocation_ratio=1.0, disk_allocation_ratio=1.0)
    now = models.utcnow()
    got: list[object] = []

    def claim() -> None:
        try:
            got.append(claims.Claims(conf).claim(
                node, str(uuid.uuid4()), claims.Usage(1, 512, 1)))
        except claims.ClaimConflict as e:
            got.append(e)

    other = engine.connect()
    try:
        other.execute(NODES.update().where(NODES.c.id == node).values(
            generation=NODES.c.generation + 1))
        other.execute(ALLOCATIONS.insert().values(
            uuid=str(uuid.uuid4()), instance_uuid=str(uuid.uuid4()),
            compute_node_id=node, vcpus=taken, memory_mb=512, disk_gb=1,
            created_at=now))
        thread = threading.Thread(target=claim)
        thread.start()
        _wait_for_lock_waiter(engine)
        other.commit()
        thread.join(30)
    finally:
        other.close()
    assert len(got) == 1
    if outcome == "conflict":
        assert isinstance(got[0], claims.ClaimConflict), got
    else:
        assert isinstance(got[0], claims.Claim), got
        # Made under the row lock after the other claim's bump: its own
        # bump is the second.
        assert got[0].generation == 2
    with engine.connect() as connection:
        used = connection.execute(sa.select(sa.func.sum(
            ALLOCATIONS.c.vcpus))).scalar_one()
    assert used == 2
    db_api.dispose_engines()


def test_one_statement_claims_tell_the_generation_they_left(postgresql_url):
    """The caller's host cache takes a claim in by the generation and
    change time the claim returns: they must be the row's."""
    from scheduler import claims

    conf, engine, node = one_node(postgresql_url, vcpus=8, memory_mb=8192,
                                   generation=5)
    store = claims.Claims(conf)
    made = [store.claim(node, str(uuid.uuid4()), claims.Usage(1, 512, 1))
            for _ in range(2)]
    with engine.connect() as connection:
        row = connection.execute(sa.select(NODES).where(
            NODES.c.id == node)).one()
    assert [claim.generation for claim in made] == [6, 7]
    assert (made[-1].generation, made[-1].changed_at) == (row.generation,
                                                          row.changed_at)
    db_api.dispose_engines()
