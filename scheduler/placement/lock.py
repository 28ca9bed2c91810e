"""The cluster lock mode (``[scheduler] cluster_lock``): one scheduling
pass at a time per cluster, across every scheduler process, under the
database lock ``cluster:<cluster or ->``, for at most ``[scheduler]
lock_hold_timeout`` seconds."""

import contextlib
import functools
import time
from collections.abc import Callable
from collections.abc import Iterator

from oslo_config import cfg
from oslo_log import log as logging

from scheduler.db import api as db_api
from scheduler.db import locks
from scheduler.placement.errors import LockHoldTimeout

LOG = logging.getLogger(__name__)

def _lock_name(cluster: str | None) -> str:
    return f"cluster:{cluster or '-'}"


@contextlib.contextmanager
def cluster_lock(conf: cfg.ConfigOpts, cluster: str | None
                 ) -> Iterator[Callable[[], None]]:
    """One scheduling pass, under the cluster lock when ``[scheduler]
    cluster_lock`` is set; yields its ``check_hold``, to call before each
    step: it raises LockHoldTimeout once the pass has held the lock for
    ``[scheduler] lock_hold_timeout``."""
    opts = conf.scheduler
    if not opts.cluster_lock:
        yield functools.partial(check_hold, conf, None, cluster)
        return
    name = _lock_name(cluster)
    with locks.database_lock(db_api.get_engine(conf), name,
                             opts.lock_acquire_timeout):
        started = time.monotonic()
        limit = opts.lock_hold_timeout
        yield functools.partial(check_hold, conf, started + limit
                                if limit > 0 else None, cluster)
        held = time.monotonic() - started
        if 0 < limit < held:
            LOG.warning("Scheduling pass held lock %s for %.1f s, more "
                        "than [scheduler] lock_hold_timeout (%g s); "
                        "its last step had already started, so it kept "
                        "its claims", name, held, limit)


def check_hold(conf: cfg.ConfigOpts, hold_deadline: float | None,
               cluster: str | None) -> None:
    """LockHoldTimeout once ``hold_deadline`` has passed; called before
    each step of a pass, whose caller then releases its claims."""
    if hold_deadline is None or time.monotonic() <= hold_deadline:
        return
    limit = conf.scheduler.lock_hold_timeout
    name = _lock_name(cluster)
    LOG.warning("Scheduling pass held lock %s for more than "
                "[scheduler] lock_hold_timeout (%g s); stopping it, "
                "releasing its claims and the lock", name, limit)
    raise LockHoldTimeout(
        f"scheduling in {name} took longer than [scheduler] "
        f"lock_hold_timeout ({limit:g} s); nothing was claimed, "
        "try again")
