"""Claims awaiting release, kept on disk until they are released.

A request that fails half-way while the database is away leaves claims
that ``claims.DeferredReleases`` releases once the database is back. Kept
only in memory, they would be lost (and their resources held for good)
if the service stopped or died before that. The journal keeps them on
disk under ``[DEFAULT] state_path``, one directory per database, and the
next worker to start takes them over.

Each process with claims pending has two files: ``<id>.lock``, on which
it holds an exclusive ``flock`` for as long as it lives, and
``<id>.json``, its records, replaced atomically (written to a temporary
file, synced, renamed) whenever they change. A lock file nobody holds
belongs to a process that stopped or died: its records are orphans. A
starting worker adopts them: it saves them in its own journal first,
then deletes the orphan's files, so that a claim is on disk somewhere
until it is released. Two workers adopting the same orphan at once would
both release its claims, which is harmless: a release goes by allocation
id, and the second finds nothing.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import uuid
from collections.abc import Callable

from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy.engine import make_url

LOG = logging.getLogger(__name__)

_LOCK = ".lock"
_RECORDS = ".json"
_TEMPORARY = ".tmp"


def journal_directory(conf: cfg.ConfigOpts) -> str:
    """``<state_path>/pending_releases/<database>``: services sharing a
    state path but not a database never adopt each other's claims.

    The database is named by backend, host, port and name only, so that
    a new password or driver keeps the directory.
    """
    url = make_url(conf.database.connection)
    name = (f"{url.get_backend_name()}://{url.host or ''}:{url.port or ''}"
            f"/{url.database or ''}")
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return os.path.join(conf.state_path, "pending_releases", digest)


def _sync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class ReleaseJournal:
    """The records (JSON-safe dicts) one process has pending, in
    ``directory``. Not thread-safe: its owner serialises the calls."""

    def __init__(self, directory: str):
        self.directory = directory
        self.id = str(uuid.uuid4())
        self.path = self._path(self.id, _RECORDS)
        self._lock_fd: int | None = None

    def _path(self, journal_id: str, suffix: str) -> str:
        return os.path.join(self.directory, journal_id + suffix)

    def save(self, records: list[dict]) -> bool:
        """Make ``records`` what is on disk; none removes the files.

        False (and logged) when the disk refused (full, no permission):
        the records are then pending in memory only.
        """
        try:
            if records:
                self._write(json.dumps(records).encode())
            else:
                self._remove()
        except OSError as e:
            LOG.error("Could not write the claims awaiting release to %s "
                      "(%s); a restart of this service before the database "
                      "is back would leave them claimed", self.path, e)
            return False
        return True

    def _write(self, data: bytes) -> None:
        if self._lock_fd is None:
            self._lock()
        temporary = self.path + _TEMPORARY
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                     0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, self.path)
        _sync_directory(self.directory)

    def _lock(self) -> None:
        # Locked under a temporary name, then renamed: an adopter only
        # ever sees lock files their owner already holds.
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        temporary = self._path(self.id, _LOCK + _TEMPORARY)
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.rename(temporary, self._path(self.id, _LOCK))
        except OSError:
            os.close(fd)
            raise
        self._lock_fd = fd

    def _remove(self) -> None:
        if self._lock_fd is None:
            return
        _unlink_quietly(self.path)
        os.unlink(self._path(self.id, _LOCK))
        os.close(self._lock_fd)
        self._lock_fd = None

    def adopt(self, keep: Callable[[list[dict]], None]) -> int:
        """Hand the records of every orphan to ``keep``, then delete the
        orphan's files; returns how many records were adopted.

        ``keep`` must have saved them in this journal when it returns; it
        raises ValueError for records it cannot take, OSError when it
        could not save them. Either way the orphan is logged and left
        where it is, as is one whose files cannot be read.
        """
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return 0
        except OSError as e:
            LOG.error("Cannot look for claims awaiting release in %s (%s)",
                      self.directory, e)
            return 0
        adopted = 0
        for name in names:
            journal_id, suffix = os.path.splitext(name)
            if suffix != _LOCK or journal_id == self.id:
                continue
            try:
                adopted += self._adopt(journal_id, keep)
            except (OSError, ValueError) as e:
                LOG.error("Claims awaiting release in %s cannot be taken "
                          "over (%s); left in place: release them with the "
                          "allocation ids it holds",
                          self._path(journal_id, _RECORDS), e)
        return adopted

    def _adopt(self, journal_id: str,
               keep: Callable[[list[dict]], None]) -> int:
        try:
            fd = os.open(self._path(journal_id, _LOCK), os.O_RDWR)
        except FileNotFoundError:
            return 0  # adopted by another worker meanwhile
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return 0  # its process is alive
            if os.fstat(fd).st_nlink == 0:
                return 0  # adopted and deleted by another worker
            records = self._read(journal_id)
            if records:
                keep(records)
            for suffix in (_RECORDS, _RECORDS + _TEMPORARY, _LOCK):
                _unlink_quietly(self._path(journal_id, suffix))
            _sync_directory(self.directory)
            return len(records)
        finally:
            os.close(fd)

    def _read(self, journal_id: str) -> list[dict]:
        try:
            with open(self._path(journal_id, _RECORDS), "rb") as file:
                records = json.load(file)
        except FileNotFoundError:
            return []  # died before its first save completed
        if not isinstance(records, list) or not all(
                isinstance(record, dict) for record in records):
            raise ValueError("expected a JSON list of objects")
        return records
