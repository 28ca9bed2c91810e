"""Waiting for pending claims (``[scheduler] pending_retry_timeout``).

A claim is pending until the node's next metrics report shows the
instance running. A request that found no room while pending claims
existed in its cluster is tried again every ``PENDING_POLL_INTERVAL``
seconds until the timeout: the pending instances may turn out smaller
than claimed, or fail and be released.
"""

import contextlib
import time
from collections.abc import Iterator

from oslo_config import cfg
from oslo_log import log as logging

from scheduler import exception
from scheduler.placement.stats import ManagerStats

LOG = logging.getLogger(__name__)

#: Seconds between the attempts of a request waiting for pending claims
#: (``[scheduler] pending_retry_timeout``).
PENDING_POLL_INTERVAL = 0.5


def attempts(conf: cfg.ConfigOpts, stats: ManagerStats, what: str,
             cluster: str | None
             ) -> Iterator[contextlib.AbstractContextManager[None]]:
    """The attempts at placing a request, each a context to run one in::

        for attempt in attempts(conf, stats, what, cluster):
            with attempt:
                return place()

    An attempt that raises NoValidHost with pending claims in the cluster
    (``NoValidHost.pending``) before the timeout waits and lets the loop
    go on; any other error leaves it. ``what`` and ``cluster`` name the
    request in the log."""
    deadline = time.monotonic() + conf.scheduler.pending_retry_timeout
    while True:
        yield _attempt(stats, deadline, what, cluster)


@contextlib.contextmanager
def _attempt(stats: ManagerStats, deadline: float, what: str,
             cluster: str | None) -> Iterator[None]:
    try:
        yield
    except exception.NoValidHost as e:
        left = deadline - time.monotonic()
        if not e.pending or left <= 0:
            stats.add(no_valid_host=1)
            raise
        LOG.info("No host for %s yet, but pending claims exist in "
                 "cluster %s; retrying for up to %.1f s more: %s",
                 what, cluster or "(any)", left, e)
        stats.add(pending_waits=1)
        time.sleep(min(PENDING_POLL_INTERVAL, left))
