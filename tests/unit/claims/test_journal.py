"""scheduler.claims.journal: claims awaiting release kept on disk, adopted
from stopped processes, left for the operator when unreadable."""

import dataclasses
import datetime
import json
import pathlib

import pytest
from sqlalchemy import exc as sa_exc

from scheduler import claims
from scheduler.claims import journal as release_journal
from tests.unit.claims.fakes import ONE
from tests.unit.claims.fakes import add_node
from tests.unit.claims.fakes import allocations
from tests.unit.claims.fakes import new_uuid

# Claims awaiting release, on disk


class DatabaseAway(claims.Claims):
    """Claims whose releases the database refuses."""

    def release_allocation(self, allocation_id, made_before=None):
        raise sa_exc.OperationalError("DELETE", {}, Exception(
            "connection refused"))


def journal_files(directory) -> list[str]:
    return sorted(path.name for path in pathlib.Path(directory).iterdir())


def write_orphan(directory, name: str, text: str | None) -> None:
    """The files a process killed with claims pending leaves: its lock
    file, which nobody holds any more, and its records."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.lock").touch()
    if text is not None:
        (directory / f"{name}.json").write_text(text)


def new_releases(store, journal_dir, **kwargs) -> claims.DeferredReleases:
    return claims.DeferredReleases(
        store, journal=release_journal.ReleaseJournal(journal_dir),
        **kwargs)


@pytest.fixture
def journal_dir(conf):
    return release_journal.journal_directory(conf)


def test_pending_releases_are_kept_on_disk_until_released(
        conf, engine, store, journal_dir):
    node = add_node(engine, "a")
    held = store.claim(node, new_uuid(), ONE)
    away = new_releases(DatabaseAway(conf), journal_dir, interval=0.01)
    away.add(held)
    record, = json.loads(pathlib.Path(away.journal.path).read_text())
    # When it was given up: a retry that takes the claim over after that
    # keeps it from this release (Claims.keep).
    deferred = datetime.datetime.fromisoformat(record.pop("deferred_at"))
    assert away.pending()[0].deferred_at == deferred
    assert claims.Claim(**record) == dataclasses.replace(
        held, generation=None, changed_at=None)
    assert journal_files(journal_dir) == [f"{away.journal.id}.json",
                                          f"{away.journal.id}.lock"]
    assert away.cancel(held.allocation_id)
    assert journal_files(journal_dir) == []


def test_a_stopped_process_pending_releases_are_adopted_and_released(
        conf, engine, store, journal_dir):
    node = add_node(engine, "a")
    held = [store.claim(node, new_uuid(), ONE) for _ in range(2)]
    write_orphan(journal_dir, "dead", json.dumps(
        [claims._record(claim) for claim in held]))
    write_orphan(journal_dir, "died-before-saving", None)
    releases = new_releases(store, journal_dir, interval=0.01)
    assert releases.adopt_orphans() == 2
    assert releases.wait_until_done(10)
    assert allocations(engine) == []
    assert releases.released == 2
    assert journal_files(journal_dir) == []


def test_a_live_process_pending_releases_are_not_adopted(
        conf, engine, store, journal_dir):
    node = add_node(engine, "a")
    held = store.claim(node, new_uuid(), ONE)
    alive = new_releases(DatabaseAway(conf), journal_dir, interval=60)
    alive.add(held)
    try:
        assert new_releases(store, journal_dir).adopt_orphans() == 0
        assert len(allocations(engine)) == 1
        assert [claim.allocation_id for claim in alive.pending()] == [
            held.allocation_id]
        assert journal_files(journal_dir) == [f"{alive.journal.id}.json",
                                              f"{alive.journal.id}.lock"]
    finally:
        alive.cancel(held.allocation_id)


def test_an_unreadable_journal_is_left_for_the_operator(
        conf, engine, store, journal_dir, caplog):
    node = add_node(engine, "a")
    held = store.claim(node, new_uuid(), ONE)
    write_orphan(journal_dir, "torn", '[{"allocation_id": "x"')
    write_orphan(journal_dir, "odd", '[{"allocation_id": "x"}]')
    record = {**claims._record(held), "vcpus": "1"}
    write_orphan(journal_dir, "typed", json.dumps([record]))
    write_orphan(journal_dir, "dead", json.dumps([claims._record(held)]))
    releases = new_releases(store, journal_dir, interval=0.01)
    assert releases.adopt_orphans() == 1
    assert releases.wait_until_done(10)
    assert allocations(engine) == []
    assert journal_files(journal_dir) == [
        "odd.json", "odd.lock", "torn.json", "torn.lock", "typed.json",
        "typed.lock"]
    errors = [r.getMessage() for r in caplog.records
              if r.levelname == "ERROR"]
    assert len(errors) == 3
    assert all("left in place" in message for message in errors)
    assert any("vcpus '1' is not of type int" in message
               for message in errors)


def test_orphans_stay_put_when_their_claims_cannot_be_saved_again(
        conf, engine, store, journal_dir, monkeypatch, caplog):
    node = add_node(engine, "a")
    held = store.claim(node, new_uuid(), ONE)
    write_orphan(journal_dir, "dead", json.dumps([claims._record(held)]))
    releases = new_releases(store, journal_dir, interval=0.01)
    monkeypatch.setattr(releases.journal, "save", lambda records: False)
    assert releases.adopt_orphans() == 0
    assert releases.pending() == []
    assert journal_files(journal_dir) == ["dead.json", "dead.lock"]
    assert len(allocations(engine)) == 1
    assert "could not be written" in caplog.text


def test_an_unlistable_journal_directory_does_not_stop_the_start(
        conf, store, journal_dir, monkeypatch, caplog):
    write_orphan(journal_dir, "dead", "[]")

    def refuse(path):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(release_journal.os, "listdir", refuse)
    assert new_releases(store, journal_dir).adopt_orphans() == 0
    assert "Permission denied" in caplog.text


def test_services_on_other_databases_keep_their_own_journals(conf):
    here = release_journal.journal_directory(conf)
    assert here.startswith(conf.state_path)
    original = conf.database.connection
    try:
        conf.set_override("connection", "sqlite:////elsewhere.sqlite",
                          group="database")
        assert release_journal.journal_directory(conf) != here
        # A new password or driver is the same database.
        conf.set_override(
            "connection", "postgresql+psycopg://u:old@db/scheduler",
            group="database")
        before = release_journal.journal_directory(conf)
        conf.set_override(
            "connection", "postgresql://u:new@db/scheduler?sslmode=require",
            group="database")
        assert release_journal.journal_directory(conf) == before
    finally:
        conf.set_override("connection", original, group="database")
