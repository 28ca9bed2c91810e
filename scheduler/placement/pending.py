"""Waiting for pending claims (``[scheduler] pending_retry_timeout``).

A claim is pending until the node's next metrics report shows the
instance running. A request that found no room while pending claims
existed in its cluster is tried again every ``PENDING_POLL_INTERVAL``
seconds until the timeout: the pending instances may turn out smaller
than claimed, or fail and be released.
"""

import time
from collections.abc import Callable
from typing import TypeVar

from oslo_config import cfg
from oslo_log import log as logging

from scheduler import exception
from scheduler.placement.stats import ManagerStats

LOG = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Seconds between the attempts of a request waiting for pending claims
#: (``[scheduler] pending_retry_timeout``).
PENDING_POLL_INTERVAL = 0.5


def retry_while_pending(conf: cfg.ConfigOpts, stats: ManagerStats,
                        attempt: Callable[[int], _T], what: str,
                        cluster: str | None) -> _T:
    """``attempt(number)`` (numbered from 1) until it places the request,
    again while it raises NoValidHost with pending claims in the cluster
    (``NoValidHost.pending``) and the timeout has not passed. ``what`` and
    ``cluster`` name the request in the log."""
    deadline = time.monotonic() + conf.scheduler.pending_retry_timeout
    number = 1
    while True:
        try:
            return attempt(number)
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
            number += 1
