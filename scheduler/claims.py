"""Claims: resources an instance holds on a compute node, in the database.

The database is the single source of truth (DESIGN §6): whatever the
schedulers' caches say, a claim is only made in a short transaction that

1. bumps the node's ``generation`` and ``changed_at``, which locks its
   row until the transaction ends (on SQLite, which has no row locks, the
   transaction starts with ``BEGIN IMMEDIATE``, which takes the
   database's write lock); the bump is also what makes every scheduler's
   host cache read the node again on its next refresh,
2. reads the node's capacity and sums its allocations again, in a new
   statement (READ COMMITTED on PostgreSQL and MariaDB, so the sums see
   every claim committed before the lock was granted),
3. compares with capacity x allocation ratio (the node's own ratio column,
   else ``[filter_scheduler] *_allocation_ratio``) and rolls back, bump
   included, when the node is full,
4. inserts the allocation and commits.

Two claims on one node therefore run one after the other, whichever
workers, processes or machines make them. Claims on different nodes never
wait for each other.

On PostgreSQL the same check usually takes one statement and one round
trip (``_CAS_CLAIM``, in autocommit): it reads the node's generation,
capacity and claimed sums from one snapshot, bumps the generation only
if it still holds the value read (compare-and-swap: PostgreSQL re-reads
the row after waiting for its lock) and the claim fits, and inserts the
allocation only if the bump happened. A node whose generation moved
under the statement (a concurrent claim, release or report) is claimed
with the locking transaction above instead, which always answers.

An instance holds at most one claim (``allocations.instance_uuid`` is
unique): claiming for an instance that already holds one returns that
claim, which is what makes a retried request idempotent.

Claims use an engine without pool pre-ping (one round trip less per
claim): a statement failing because the database dropped its pooled
connection is run once more, on a fresh connection. Should the lost
statement have committed, the retry finds the claim under its own
allocation id and returns it as made by this call.
"""

import collections
import contextlib
import dataclasses
import datetime
import threading
import uuid
from collections.abc import Iterable
from collections.abc import Iterator

import sqlalchemy as sa
from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from scheduler import exception
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.release_journal import ReleaseJournal

LOG = logging.getLogger(__name__)

_NODES = models.ComputeNode.__table__
_ALLOCATIONS = models.Allocation.__table__

# A deadlock or serialisation failure reported by the database means the
# transaction was rolled back and may simply be run again.
_TRANSIENT_SQLSTATES = frozenset({"40001", "40P01"})
# MariaDB: 1213 deadlock, 1205 lock wait timeout (the claim holds one row
# lock at a time, so either is another transaction's doing).
_TRANSIENT_MYSQL_ERRORS = frozenset({1205, 1213})
_ATTEMPTS = 3

# Lookups by instance uuid go in IN lists of this many: far below every
# backend's bound-parameter limit.
_IN_CHUNK = 500


@dataclasses.dataclass(frozen=True)
class Claim:
    """One allocation and the node it is on."""

    allocation_id: str
    instance_uuid: str
    node_id: int
    node_uuid: str
    host: str
    nodename: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    #: True when the instance already held this claim before the call
    #: that returned it (an idempotent retry, or a concurrent duplicate
    #: request that won the race): the caller did not make it and must not
    #: release it on its own failure.
    existing: bool = False
    #: The node's generation and change time as this claim left them,
    #: when the call that returns it made it (else None): what lets the
    #: caller's host cache take the claim in without reading the node
    #: again (``HostManager.record_claim``).
    generation: int | None = None
    changed_at: datetime.datetime | None = None
    #: When a failed request gave the claim up for release in the
    #: background (``DeferredReleases``): the release spares the claim if
    #: a retry handed it out since (``Claims.keep``).
    deferred_at: datetime.datetime | None = None


class ClaimConflict(exception.SchedulerError):
    """The node cannot take the claim: full (another scheduler claimed
    first) or gone. The caller tries its next candidate."""

    def __init__(self, node_id: int, host: str, reason: str):
        self.node_id = node_id
        self.host = host
        self.reason = reason
        super().__init__(f"cannot claim on {host} (node {node_id}): "
                         f"{reason}")


class DatabaseError(exception.SchedulerError):
    """A database error interrupted a request; its transaction was rolled
    back. The original SQLAlchemy error is the ``__cause__``."""


@dataclasses.dataclass(frozen=True)
class Usage:
    """What an allocation takes on its node."""

    vcpus: int
    memory_mb: int
    disk_gb: int


def is_transient(error: BaseException) -> bool:
    """True for deadlocks and serialisation failures: the database rolled
    the transaction back and running it again may succeed."""
    orig = getattr(error, "orig", None)
    if orig is None:
        return False
    if getattr(orig, "sqlstate", None) in _TRANSIENT_SQLSTATES:
        return True
    args = getattr(orig, "args", ())
    return bool(args) and args[0] in _TRANSIENT_MYSQL_ERRORS


@contextlib.contextmanager
def write_transaction(engine: Engine) -> Iterator[sa.Connection]:
    """A connection in a transaction fit for read-check-write: committed
    when the block ends, rolled back when it raises.

    SQLite: ``BEGIN IMMEDIATE`` takes the write lock before the first
    read. pysqlite would otherwise start the transaction only at the
    first INSERT, after the capacity check, and two writers could both
    pass the check. PostgreSQL, MariaDB: READ COMMITTED, so that each
    statement sees what committed before it, in particular the claims of
    the transaction whose row lock we waited for (MariaDB's default
    REPEATABLE READ would keep reading the older snapshot).
    """
    backend = engine.dialect.name
    with engine.connect() as connection:
        if backend == "sqlite":
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        elif backend in ("mysql", "mariadb"):
            # For the next transaction only: one statement, and nothing to
            # reset when the connection goes back to the pool.
            connection.exec_driver_sql(
                "SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
        else:
            # psycopg applies it in the BEGIN it sends anyway; the pool
            # resets it on check-in.
            connection = connection.execution_options(
                isolation_level="READ COMMITTED")
        try:
            yield connection
        except BaseException:
            connection.rollback()
            raise
        connection.commit()


# Statements are built once: constructing them per claim costs more
# Python time than the database spends running them.

#: Bumps a node's generation and change time; locks its row.
_BUMP = (_NODES.update().where(_NODES.c.id == sa.bindparam("node_id"))
         .values(generation=_NODES.c.generation + 1,
                 changed_at=sa.bindparam("now")))


def _sum(column: sa.Column) -> sa.Label:
    return sa.func.coalesce(sa.func.sum(column), 0).label(
        f"{column.name}_used")


_USED = sa.select(
    _sum(_ALLOCATIONS.c.vcpus), _sum(_ALLOCATIONS.c.memory_mb),
    _sum(_ALLOCATIONS.c.disk_gb),
).where(_ALLOCATIONS.c.compute_node_id == sa.bindparam("node_id")
        ).subquery("used")

#: A node's identity, capacity, ratios and claimed resources (one scan of
#: its allocations).
_NODE_USAGE = sa.select(
    _NODES.c.uuid, _NODES.c.host, _NODES.c.hypervisor_hostname,
    _NODES.c.generation, _NODES.c.vcpus, _NODES.c.memory_mb,
    _NODES.c.local_gb, _NODES.c.cpu_allocation_ratio,
    _NODES.c.ram_allocation_ratio, _NODES.c.disk_allocation_ratio,
    _USED.c.vcpus_used, _USED.c.memory_mb_used, _USED.c.disk_gb_used,
).select_from(_NODES.join(_USED, sa.true())).where(
    _NODES.c.id == sa.bindparam("node_id"))

_INSERT = _ALLOCATIONS.insert()

#: PostgreSQL: the whole claim in one statement. ``node`` reads the node
#: and its claimed sums in the statement's snapshot; ``bump`` updates the
#: node only if the claim fits and its generation is still the one read
#: (after waiting for a concurrent claim's row lock PostgreSQL evaluates
#: the condition on the row as committed, so a moved generation means the
#: sums are stale and nothing is written); ``claim`` inserts only if the
#: bump did. The result is the node as read and whether it was claimed.
_CAS_CLAIM = sa.text("""
WITH node AS (
    SELECT n.id, n.generation, n.uuid, n.host, n.hypervisor_hostname,
           n.vcpus, n.memory_mb, n.local_gb,
           COALESCE(n.cpu_allocation_ratio, :cpu_ratio) AS cpu_ratio,
           COALESCE(n.ram_allocation_ratio, :ram_ratio) AS ram_ratio,
           COALESCE(n.disk_allocation_ratio, :disk_ratio) AS disk_ratio,
           u.vcpus_used, u.memory_mb_used, u.disk_gb_used
    FROM compute_nodes n, (
        SELECT COALESCE(SUM(a.vcpus), 0) AS vcpus_used,
               COALESCE(SUM(a.memory_mb), 0) AS memory_mb_used,
               COALESCE(SUM(a.disk_gb), 0) AS disk_gb_used
        FROM allocations a WHERE a.compute_node_id = :node_id) u
    WHERE n.id = :node_id
), bump AS (
    UPDATE compute_nodes c
    SET generation = c.generation + 1, changed_at = :now
    FROM node
    WHERE c.id = node.id AND c.generation = node.generation
      AND (:vcpus <= 0
           OR node.vcpus_used + :vcpus <= node.vcpus * node.cpu_ratio)
      AND (:memory_mb <= 0
           OR node.memory_mb_used + :memory_mb
              <= node.memory_mb * node.ram_ratio)
      AND (:disk_gb <= 0
           OR node.disk_gb_used + :disk_gb
              <= node.local_gb * node.disk_ratio)
    RETURNING c.id
), claim AS (
    INSERT INTO allocations (uuid, instance_uuid, compute_node_id, vcpus,
                             memory_mb, disk_gb, instance_group, created_at)
    SELECT :uuid, :instance_uuid, bump.id, :vcpus, :memory_mb, :disk_gb,
           :instance_group, :now
    FROM bump
    RETURNING id
)
SELECT node.uuid, node.host, node.hypervisor_hostname, node.generation,
       node.vcpus, node.memory_mb, node.local_gb, node.cpu_ratio,
       node.ram_ratio, node.disk_ratio, node.vcpus_used,
       node.memory_mb_used, node.disk_gb_used,
       (SELECT count(*) FROM claim) AS claimed
FROM node
""").bindparams(
    sa.bindparam("cpu_ratio", type_=sa.Float),
    sa.bindparam("ram_ratio", type_=sa.Float),
    sa.bindparam("disk_ratio", type_=sa.Float),
    sa.bindparam("vcpus", type_=sa.Integer),
    sa.bindparam("memory_mb", type_=sa.Integer),
    sa.bindparam("disk_gb", type_=sa.Integer),
    sa.bindparam("now", type_=sa.DateTime),
)

_CLAIMS = sa.select(
    _ALLOCATIONS.c.uuid, _ALLOCATIONS.c.instance_uuid,
    _ALLOCATIONS.c.compute_node_id, _NODES.c.uuid, _NODES.c.host,
    _NODES.c.hypervisor_hostname, _ALLOCATIONS.c.vcpus,
    _ALLOCATIONS.c.memory_mb, _ALLOCATIONS.c.disk_gb,
).join_from(_ALLOCATIONS, _NODES,
            _ALLOCATIONS.c.compute_node_id == _NODES.c.id).where(
    _ALLOCATIONS.c.instance_uuid.in_(sa.bindparam("uuids",
                                                  expanding=True)))


class _Retries:
    """Whether a failed claim or release runs again: up to ``_ATTEMPTS``
    runs for deadlocks, serialisation failures and duplicate-key races,
    plus one run on a fresh connection after the database dropped the
    pooled one (the claims engine does not pre-ping)."""

    def __init__(self) -> None:
        self.runs = 1
        self.reconnected = False

    def another(self, error: BaseException | None) -> bool:
        """True when the run that failed with ``error`` (None: a
        duplicate key) is to be retried."""
        if (isinstance(error, sa_exc.DBAPIError)
                and error.connection_invalidated):
            if self.reconnected:
                return False
            self.reconnected = True
            return True
        if error is not None and not is_transient(error):
            return False
        self.runs += 1
        return self.runs <= _ATTEMPTS


def _ratio(own: float | None, default: float) -> float:
    return default if own is None else own


def _check_room(node_id: int, node: sa.Row, usage: Usage, cpu_ratio: float,
                ram_ratio: float, disk_ratio: float) -> None:
    """Raise ClaimConflict unless ``usage`` fits on ``node`` (a row with
    capacity and ``*_used`` columns) with these allocation ratios."""
    checks = (
        ("vCPUs", usage.vcpus, node.vcpus_used, node.vcpus, cpu_ratio),
        ("MB of RAM", usage.memory_mb, node.memory_mb_used, node.memory_mb,
         ram_ratio),
        ("GB of disk", usage.disk_gb, node.disk_gb_used, node.local_gb,
         disk_ratio),
    )
    for unit, wanted, taken, capacity, ratio in checks:
        if wanted > 0 and taken + wanted > capacity * ratio:
            raise ClaimConflict(node_id, node.host,
                                f"needs {wanted} {unit}, {taken} of "
                                f"{capacity} x {ratio:g} claimed")


def _new_claim(node_id: int, node: sa.Row, instance_uuid: str,
               usage: Usage, allocation_id: str, generation: int,
               changed_at: datetime.datetime) -> Claim:
    return Claim(allocation_id=allocation_id, instance_uuid=instance_uuid,
                 node_id=node_id, node_uuid=node.uuid, host=node.host,
                 nodename=node.hypervisor_hostname, vcpus=usage.vcpus,
                 memory_mb=usage.memory_mb, disk_gb=usage.disk_gb,
                 generation=generation, changed_at=changed_at)


class Claims:
    """Claims in the database of ``[database] connection``.

    Thread-safe: every call uses a connection of its own from the pool.
    The capacity check uses ``[filter_scheduler] *_allocation_ratio`` for
    nodes without a ratio of their own.
    """

    def __init__(self, conf: cfg.ConfigOpts):
        self.conf = conf

    @property
    def engine(self) -> Engine:
        # Looked up per call: db_api.dispose_engines() (tests, forked
        # workers) replaces the engine.
        return db_api.get_engine(self.conf, pre_ping=False)

    def claim(self, node_id: int, instance_uuid: str, usage: Usage,
              group: str | None = None,
              allocation_id: str | None = None) -> Claim:
        """Claim ``usage`` on node ``node_id`` for ``instance_uuid``.

        Raises ClaimConflict when the node lacks room (capacity x
        allocation ratio, per resource; a resource not asked for is not
        checked, as in the filters) or no longer exists. When the insert
        finds the instance already holding a claim (on any node: the
        unique ``instance_uuid``), that claim is returned with
        ``existing`` set and nothing is claimed; callers look up existing
        claims with ``find()`` first, as the capacity check comes before
        the insert. ``allocation_id`` defaults to a new uuid.
        """
        # One id for every attempt: a claim found under it was made by
        # this call (an attempt whose reply the lost connection swallowed).
        allocation_id = allocation_id or str(uuid.uuid4())
        retries = _Retries()
        while True:
            try:
                return self._claim(node_id, instance_uuid, usage, group,
                                   allocation_id)
            except sa_exc.IntegrityError:
                # The unique instance_uuid: a concurrent request for the
                # same instance claimed first. Its claim is the answer.
                held = self.find([instance_uuid]).get(instance_uuid)
                if held is not None:
                    if held.allocation_id == allocation_id:
                        return dataclasses.replace(held, existing=False)
                    return held
                # Released in the meantime (or another constraint): the
                # next attempt tells which.
                if not retries.another(None):
                    raise
            except sa_exc.DBAPIError as e:
                if not retries.another(e):
                    raise
                LOG.debug("Claim for %s on node %s failed (%s); retrying",
                          instance_uuid, node_id, db_api.one_line(e))

    def _claim(self, node_id: int, instance_uuid: str, usage: Usage,
               group: str | None, allocation_id: str) -> Claim:
        engine = self.engine
        if engine.dialect.name == "postgresql":
            claim = self._swap_claim(engine, node_id, instance_uuid, usage,
                                     group, allocation_id)
            if claim is not None:
                return claim
        return self._locked_claim(engine, node_id, instance_uuid, usage,
                                  group, allocation_id)

    def _swap_claim(self, engine: Engine, node_id: int, instance_uuid: str,
                    usage: Usage, group: str | None, allocation_id: str
                    ) -> Claim | None:
        """The claim in one statement (``_CAS_CLAIM``); None when the
        node's generation moved under it."""
        opts = self.conf.filter_scheduler
        now = models.utcnow()
        with engine.connect() as connection:
            node = connection.execution_options(
                isolation_level="AUTOCOMMIT").execute(_CAS_CLAIM, {
                    "node_id": node_id, "now": now,
                    "cpu_ratio": opts.cpu_allocation_ratio,
                    "ram_ratio": opts.ram_allocation_ratio,
                    "disk_ratio": opts.disk_allocation_ratio,
                    "vcpus": usage.vcpus, "memory_mb": usage.memory_mb,
                    "disk_gb": usage.disk_gb, "uuid": allocation_id,
                    "instance_uuid": instance_uuid,
                    "instance_group": group}).one_or_none()
        if node is None:
            raise ClaimConflict(node_id, "?", "the node no longer exists")
        if not node.claimed:
            # Full as read, else the generation moved: decide under the
            # row lock.
            _check_room(node_id, node, usage, node.cpu_ratio,
                        node.ram_ratio, node.disk_ratio)
            return None
        # The swap bumped the generation it read.
        return _new_claim(node_id, node, instance_uuid, usage,
                          allocation_id, node.generation + 1, now)

    def _locked_claim(self, engine: Engine, node_id: int,
                      instance_uuid: str, usage: Usage, group: str | None,
                      allocation_id: str) -> Claim:
        opts = self.conf.filter_scheduler
        now = models.utcnow()
        with write_transaction(engine) as connection:
            # The bump comes first: it takes the node's row lock, waiting
            # for any other claim on the node to commit, and the rollback
            # undoes it when the node turns out full.
            if connection.execute(_BUMP, {"node_id": node_id,
                                          "now": now}).rowcount == 0:
                raise ClaimConflict(node_id, "?", "the node no longer "
                                    "exists")
            # A statement of its own, after the lock: under READ
            # COMMITTED its snapshot holds every claim committed on the
            # node.
            node = connection.execute(_NODE_USAGE,
                                      {"node_id": node_id}).one()
            _check_room(node_id, node, usage,
                        _ratio(node.cpu_allocation_ratio,
                               opts.cpu_allocation_ratio),
                        _ratio(node.ram_allocation_ratio,
                               opts.ram_allocation_ratio),
                        _ratio(node.disk_allocation_ratio,
                               opts.disk_allocation_ratio))
            connection.execute(_INSERT, {
                "uuid": allocation_id, "instance_uuid": instance_uuid,
                "compute_node_id": node_id, "vcpus": usage.vcpus,
                "memory_mb": usage.memory_mb, "disk_gb": usage.disk_gb,
                "instance_group": group, "created_at": now})
        # Read after the bump, in its transaction: the bumped generation.
        return _new_claim(node_id, node, instance_uuid, usage,
                          allocation_id, node.generation, now)

    def find(self, instance_uuids: Iterable[str]) -> dict[str, Claim]:
        """The claims held by these instances, by instance uuid (instances
        without one are absent). Each has ``existing`` set."""
        wanted = list(dict.fromkeys(instance_uuids))
        found: dict[str, Claim] = {}
        if not wanted:
            return found
        with self.engine.connect() as connection:
            for start in range(0, len(wanted), _IN_CHUNK):
                rows = connection.execute(_CLAIMS, {
                    "uuids": wanted[start:start + _IN_CHUNK]}).all()
                for row in rows:
                    found[row[1]] = Claim(*row, existing=True)
        return found

    def release(self, instance_uuid: str) -> bool:
        """Delete the instance's claim; False when it held none."""
        return self._release(_ALLOCATIONS.c.instance_uuid == instance_uuid)

    def release_allocation(self, allocation_id: str,
                           made_before: datetime.datetime | None = None
                           ) -> bool:
        """Delete one allocation by its own uuid; False when it is gone.

        Used to undo the claims of a failed request: by allocation, so
        that a claim some other request made for the same instance in the
        meantime is never touched. With ``made_before``, an allocation
        stamped later (a retry of the request took it over, ``keep``) is
        spared too, whichever process the retry reached.
        """
        where = _ALLOCATIONS.c.uuid == allocation_id
        if made_before is not None:
            where &= _ALLOCATIONS.c.created_at <= made_before
        return self._release(where)

    def keep(self, claim: Claim) -> bool:
        """Take over an existing claim that a failed request may have left
        for release (by this process or any other): stamped anew, so
        that a release deferred before now spares it. False when it is
        gone (released meanwhile): the caller must claim again."""
        now = models.utcnow()
        with write_transaction(self.engine) as connection:
            # The node first, the order of every writer; its change key
            # moves so that host caches read the new stamp.
            connection.execute(_BUMP, {"node_id": claim.node_id,
                                       "now": now})
            kept = connection.execute(
                _ALLOCATIONS.update()
                .where(_ALLOCATIONS.c.uuid == claim.allocation_id)
                .values(created_at=now)).rowcount
            if kept != 1:
                connection.rollback()
                return False
        return True

    def _release(self, where: sa.ColumnElement) -> bool:
        retries = _Retries()
        while True:
            try:
                return self._release_once(where)
            except sa_exc.DBAPIError as e:
                if not retries.another(e):
                    raise

    def _release_once(self, where: sa.ColumnElement) -> bool:
        with write_transaction(self.engine) as connection:
            node_id = connection.execute(
                sa.select(_ALLOCATIONS.c.compute_node_id)
                .where(where)).scalar()
            if node_id is None:
                return False
            # Node row first, then the allocation: the order claims lock
            # in, so that a release and a claim never deadlock.
            connection.execute(_BUMP, {"node_id": node_id,
                                       "now": models.utcnow()})
            deleted = connection.execute(
                _ALLOCATIONS.delete().where(where)).rowcount
            if deleted != 1:
                # Released concurrently: undo the bump, report nothing
                # released.
                connection.rollback()
                return False
        return True


#: The Claim fields a journal record holds, and their types.
_RECORD_FIELDS = {"allocation_id": str, "instance_uuid": str, "node_id": int,
                  "node_uuid": str, "host": str, "nodename": str,
                  "vcpus": int, "memory_mb": int, "disk_gb": int}


def _record(claim: Claim) -> dict:
    """A claim awaiting release as the journal keeps it."""
    record = {name: getattr(claim, name) for name in _RECORD_FIELDS}
    if claim.deferred_at is not None:
        record["deferred_at"] = claim.deferred_at.isoformat()
    return record


def _from_record(record: dict) -> Claim:
    """The claim of a journal record; ValueError naming what is wrong."""
    record = dict(record)
    # Records of earlier versions have no deferred_at: released as then.
    deferred = record.pop("deferred_at", None)
    if set(record) != set(_RECORD_FIELDS):
        raise ValueError(f"a record has the fields {sorted(record)}, "
                         f"expected {sorted(_RECORD_FIELDS)}")
    for name, kind in _RECORD_FIELDS.items():
        if not isinstance(record[name], kind) or isinstance(
                record[name], bool):
            raise ValueError(f"{name} {record[name]!r} is not of type "
                             f"{kind.__name__}")
    if deferred is not None:
        if not isinstance(deferred, str):
            raise ValueError(f"deferred_at {deferred!r} is not a string")
        deferred = datetime.datetime.fromisoformat(deferred)
    return Claim(**record, deferred_at=deferred)


#: Released allocation ids a DeferredReleases remembers: far more than a
#: retried request can lag behind its release.
_RELEASED_IDS_KEPT = 4096


class DeferredReleases:
    """Claims a failed request could not undo (the database was
    unreachable), released by a background thread that retries every
    ``interval`` seconds, doubling up to ``max_interval``, until the
    database takes each release; so that nothing half-claimed remains
    once the database is back.

    ``cancel`` takes a claim back, for a retried request of the same
    instance that is answered with it meanwhile (in this process only).
    With a ``journal`` the pending claims are also kept on disk, and
    ``adopt_orphans`` takes over those a stopped process left
    (``scheduler.release_journal``).
    """

    def __init__(self, store: Claims, interval: float = 0.5,
                 max_interval: float = 10.0,
                 journal: ReleaseJournal | None = None):
        self.store = store
        self.interval = interval
        self.max_interval = max_interval
        self.journal = journal
        self._pending: dict[str, Claim] = {}
        self._changed = threading.Condition()
        # Held while a release runs, so that cancel() waits for it.
        self._releasing = threading.Lock()
        self._thread: threading.Thread | None = None
        #: Claims released by the background thread.
        self.released = 0
        # Allocation ids the thread released lately, so that cancel()
        # can tell "released under you" from "never pending here".
        self._released_ids: collections.OrderedDict[str, None] = \
            collections.OrderedDict()

    def add(self, claim: Claim) -> None:
        if claim.deferred_at is None:
            claim = dataclasses.replace(claim, deferred_at=models.utcnow())
        with self._changed:
            self._pending[claim.allocation_id] = claim
            self._save()
            self._pending_changed()

    def adopt_orphans(self) -> int:
        """Take over the claims awaiting release that stopped processes
        left in the journal; returns how many."""
        if self.journal is None:
            return 0

        def keep(records: list[dict]) -> None:
            adopted = {claim.allocation_id: claim for claim
                       in map(_from_record, records)}
            with self._changed:
                before = dict(self._pending)
                self._pending.update(adopted)
                if not self._save():
                    # Left to the orphan's files rather than kept in
                    # memory only.
                    self._pending = before
                    raise OSError(f"{self.journal.path} could not be "
                                  "written")
                self._pending_changed()

        count = self.journal.adopt(keep)
        if count:
            LOG.info("Releasing %d claim(s) that a stopped scheduler "
                     "process left awaiting release", count)
        return count

    def _save(self) -> bool:
        # Holding _changed. False: the journal could not be written.
        if self.journal is None:
            return True
        return self.journal.save([_record(claim)
                                  for claim in self._pending.values()])

    def _pending_changed(self) -> None:
        # Holding _changed: the releasing thread runs while something is
        # pending, and waiters see the change.
        if self._pending and (self._thread is None
                              or not self._thread.is_alive()):
            self._thread = threading.Thread(
                target=self._run, daemon=True, name="claim-releases")
            self._thread.start()
        self._changed.notify_all()

    def cancel(self, allocation_id: str) -> bool:
        """Keep that claim after all, if it still exists: False when this
        process released it (the release may have run while the caller
        looked the claim up, or while this call waited for it), so that
        the caller must not hand it out; True otherwise, pending here or
        not."""
        with self._releasing, self._changed:
            if self._pending.pop(allocation_id, None) is None:
                return allocation_id not in self._released_ids
            self._save()
            self._pending_changed()
            return True

    def pending(self) -> list[Claim]:
        with self._changed:
            return list(self._pending.values())

    def wait_until_done(self, timeout: float) -> bool:
        """True once nothing is pending (tests, shutdown)."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._pending,
                                          timeout)

    def _still_pending(self, claim: Claim) -> bool:
        with self._changed:
            return claim.allocation_id in self._pending

    def _run(self) -> None:
        delay = self.interval
        while True:
            with self._changed:
                if not self._pending:
                    self._thread = None
                    return
                claim = next(iter(self._pending.values()))
            try:
                with self._releasing:
                    if not self._still_pending(claim):
                        continue
                    self.store.release_allocation(claim.allocation_id,
                                                  claim.deferred_at)
            except Exception as e:
                LOG.debug("Release of claim %s still failing (%s); next "
                          "try in %g s", claim.allocation_id,
                          db_api.one_line(e), delay)
                with self._changed:
                    self._changed.wait(delay)
                delay = min(delay * 2, self.max_interval)
                continue
            delay = self.interval
            with self._changed:
                self._released_ids[claim.allocation_id] = None
                while len(self._released_ids) > _RELEASED_IDS_KEPT:
                    self._released_ids.popitem(last=False)
                if self._pending.pop(claim.allocation_id, None) is not None:
                    self.released += 1
                    LOG.info("Released claim %s of instance %s on %s, left "
                             "by a request that failed on a database "
                             "error", claim.allocation_id,
                             claim.instance_uuid, claim.host)
                    self._save()
                self._changed.notify_all()
