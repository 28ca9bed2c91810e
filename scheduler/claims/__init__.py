"""Claims: resources an instance holds on a compute node, in the database.

The database is the single source of truth (docs/architecture.md): whatever the
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
trip (``scheduler.db.claim_sql.CAS_CLAIM``, in autocommit): it reads the
node's generation, capacity and claimed sums from one snapshot, bumps the
generation only if it still holds the value read (compare-and-swap:
PostgreSQL re-reads the row after waiting for its lock) and the claim
fits, and inserts the allocation only if the bump happened. A node
whose generation moved under the statement (a concurrent claim, release
or report) is claimed with the locking transaction above instead, which
always answers.

An instance holds at most one claim (``allocations.instance_uuid`` is
unique): claiming for an instance that already holds one returns that
claim, which is what makes a retried request idempotent.

Claims use an engine without pool pre-ping (one round trip less per
claim): a statement failing because the database dropped its pooled
connection is run once more, on a fresh connection. Should the lost
statement have committed, the retry finds the claim under its own
allocation id and returns it as made by this call.

The package: ``types`` (Claim, Usage, the errors), ``retry`` (when a
claim or release runs again), ``store`` (``Claims``), ``deferred``
(``DeferredReleases``, the background releases). Every name is imported
from here. The statements and the write transaction are in
``scheduler.db.claim_sql``.
"""

from scheduler.claims.deferred import DeferredReleases
from scheduler.claims.deferred import _from_record
from scheduler.claims.deferred import _record
from scheduler.claims.retry import _ATTEMPTS
from scheduler.claims.retry import _TRANSIENT_MYSQL_ERRORS
from scheduler.claims.retry import _TRANSIENT_SQLSTATES
from scheduler.claims.retry import is_transient
from scheduler.claims.store import Claims
from scheduler.claims.types import Claim
from scheduler.claims.types import ClaimConflict
from scheduler.claims.types import DatabaseError
from scheduler.claims.types import Usage

__all__ = [
    "_ATTEMPTS",
    "_TRANSIENT_MYSQL_ERRORS",
    "_TRANSIENT_SQLSTATES",
    "Claim",
    "ClaimConflict",
    "Claims",
    "DatabaseError",
    "DeferredReleases",
    "Usage",
    "_from_record",
    "_record",
    "is_transient",
]
