"""Claims awaiting release, kept on disk until they are released.

A request that fails half-way while the database is away leaves claims
that ``claims.DeferredReleases`` releases once the database is back. Kept
only in memory, they would be lost (and their resources held for good)
if the service stopped or died before that. The journal keeps them in a
file of their own per process under ``[DEFAULT] state_path``, one
directory per database, which the next worker to start takes over.

A process holds an exclusive ``flock`` on its file for as long as it has
claims pending: a file nobody holds belongs to a process that stopped or
died, and is an orphan. A starting worker adopts the orphans: it writes
their claims into its own file first, then deletes theirs, so that a
claim is always on disk somewhere until released. Two workers adopting
the same orphan at once would both release its claims, which is harmless:
a release goes by allocation id, and the second finds nothing.
"""

import fcntl
import hashlib
import json
import os
import uuid
from collections.abc import Callable

from oslo_config import cfg
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

_SUFFIX = ".json"


def journal_directory(conf: cfg.ConfigOpts) -> str:
    """``<state_path>/pending_releases/<database>``: services sharing a
    state path but not a database never adopt each other's claims."""
    database = hashlib.sha256(
        conf.database.connection.encode()).hexdigest()[:16]
    return os.path.join(conf.state_path, "pending_releases", database)


class ReleaseJournal:
    """The records (JSON-safe dicts) one process has pending, in
    ``directory``. Not thread-safe: its owner serialises the calls."""

    def __init__(self, directory: str):
        self.directory = directory
        self.path = os.path.join(directory, f"{uuid.uuid4()}{_SUFFIX}")
        self._fd: int | None = None

    def save(self, records: list[dict]) -> None:
        """Make ``records`` the file's content; none removes the file.

        An error (disk full, no permission) is logged: the records stay
        pending in memory.
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

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._fd = fd
        # In place, not replaced by a new file: the lock is on this one.
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)
        os.fsync(self._fd)

    def _remove(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.unlink(self.path)
        finally:
            os.close(fd)

    def adopt(self, keep: Callable[[list[dict]], None]) -> int:
        """Hand the records of every orphan file to ``keep`` (which must
        have saved them in this journal when it returns, or raise
        ValueError for records it cannot take), then delete the file;
        returns how many records were adopted.

        A file that cannot be read as records is logged and left where
        it is, for an operator to look at.
        """
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return 0
        adopted = 0
        for name in names:
            path = os.path.join(self.directory, name)
            if not name.endswith(_SUFFIX) or path == self.path:
                continue
            try:
                fd = os.open(path, os.O_RDWR)
            except FileNotFoundError:
                continue  # adopted by another worker meanwhile
            try:
                adopted += self._adopt_file(path, fd, keep)
            finally:
                os.close(fd)
        return adopted

    @staticmethod
    def _adopt_file(path: str, fd: int,
                    keep: Callable[[list[dict]], None]) -> int:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # its process is alive
        if os.fstat(fd).st_nlink == 0:
            return 0  # adopted and deleted by another worker
        with open(fd, "rb", closefd=False) as file:
            data = file.read()
        try:
            records = json.loads(data)
            if not isinstance(records, list) or not all(
                    isinstance(record, dict) for record in records):
                raise ValueError("expected a JSON list of objects")
            keep(records)
        except ValueError as e:
            LOG.error("Claims awaiting release in %s cannot be read (%s); "
                      "left in place: release them with the allocation "
                      "ids it holds", path, e)
            return 0
        os.unlink(path)
        return len(records)
