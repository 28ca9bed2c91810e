"""When a failed claim or release runs again.

A deadlock, a serialisation failure or a duplicate-key race runs the
transaction again, up to ``_ATTEMPTS`` runs in all; a statement failing
because the database dropped its pooled connection runs once more, on a
fresh connection (the claims engine does not pre-ping). Runs follow each
other at once. ``run`` is the loop, ``Retries`` its test: a plain loop
rather than tenacity's, which cost a claim more than its statement's
Python side (state objects, callbacks, a sleep of nothing) on every call.
"""

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import exc as sa_exc

# A deadlock or serialisation failure reported by the database means the
# transaction was rolled back and may simply be run again.
_TRANSIENT_SQLSTATES = frozenset({"40001", "40P01"})
# MariaDB: 1213 deadlock, 1205 lock wait timeout (the claim holds one row
# lock at a time, so either is another transaction's doing).
_TRANSIENT_MYSQL_ERRORS = frozenset({1205, 1213})
_ATTEMPTS = 3

T = TypeVar("T")


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


class Retries:
    """Whether a failed claim or release runs again: up to ``_ATTEMPTS``
    runs for deadlocks, serialisation failures and (``duplicates``: a
    claim) duplicate-key races, plus one run on a fresh connection after
    the database dropped the pooled one. One per call: it counts the
    call's runs.

    An attempt that fails in a way no run can mend (the claim's lookup of
    the claim an instance holds after a duplicate key) stores its error
    in ``final``: that error ends the call.
    """

    def __init__(self, duplicates: bool = False) -> None:
        self.runs = 1
        self.reconnected = False
        self.duplicates = duplicates
        self.final: BaseException | None = None

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

    def wants(self, error: BaseException) -> bool:
        """True to run the attempt that failed with ``error`` again."""
        if error is self.final:
            return False
        if self.duplicates and isinstance(error, sa_exc.IntegrityError):
            return self.another(None)
        return isinstance(error, sa_exc.DBAPIError) and self.another(error)


def run(attempt: Callable[[], T], retries: Retries,
        before_retry: Callable[[BaseException], None] | None = None
        ) -> T:
    """``attempt()``, run again while ``retries`` says so; the last
    failure propagates as it was raised. ``before_retry`` is called with
    the failure before each new run."""
    while True:
        try:
            return attempt()
        except Exception as error:
            if not retries.wants(error):
                raise
            if before_retry is not None:
                before_retry(error)
