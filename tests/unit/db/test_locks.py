"""scheduler.db.locks on SQLite: a lock file beside the database, held
with flock() and removed at release (issue 30: they were left behind)."""

import threading
import time

import pytest
import sqlalchemy as sa

from scheduler.db import locks


@pytest.fixture
def sqlite_engine(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    yield engine
    engine.dispose()


def test_no_lock_file_is_left_after_release(sqlite_engine, tmp_path):
    with locks.database_lock(sqlite_engine, "db-sync", 1):
        assert len(list(tmp_path.glob("db.sqlite.*.lock"))) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_held_lock_times_out_and_leaves_it_held(sqlite_engine, tmp_path):
    with locks.database_lock(sqlite_engine, "cluster:c1", 1):
        with pytest.raises(locks.LockTimeout, match="cluster:c1"), \
                locks.database_lock(sqlite_engine, "cluster:c1", 0.1):
            pass
        assert len(list(tmp_path.glob("db.sqlite.*.lock"))) == 1
    assert list(tmp_path.iterdir()) == []


def test_removal_keeps_holders_exclusive(sqlite_engine, tmp_path):
    # Waiters that opened the file the holder removes must not take the
    # lock alongside whoever opens the new one.
    inside: list[int] = []
    overlaps: list[int] = []

    def worker() -> None:
        for _ in range(10):
            with locks.database_lock(sqlite_engine, "cluster:c1", 10):
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(len(inside))
                time.sleep(0.01)
                inside.pop()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []
    assert list(tmp_path.iterdir()) == []
