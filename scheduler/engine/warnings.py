"""Warnings about a valid request that probably does not say what its
author meant: an extra spec in a misspelt scope (``resource:``), an
unscoped key that names no host attribute.

Such a request is scheduled (rejecting it would break flavors that work
in Nova), but the constraint the operator meant is not applied. Explain
output shows each warning once (and does not log it: whoever asked for
the explanation shows it); the log gets each distinct warning of a
placement once per process, not once per request or host, so that a
popular flavor does not flood it, and at most ``PER_REQUEST`` lines per
request plus one counting the others, so that one request with 1,000
keys does not either.
"""

import threading
from collections.abc import Iterable

from oslo_config import cfg
from oslo_log import log as logging

from scheduler.engine import plugin_guard
from scheduler.filters import BaseHostFilter
from scheduler.request import capability_specs
from scheduler.request import extra_specs
from scheduler.request.spec import RequestSpec

LOG = logging.getLogger(__name__)

# Bounded: flavors are few, but the keys of a request are user input.
_LOGGED_LIMIT = 1024
#: Warning lines one request may write, besides the count of the rest.
PER_REQUEST = 3
_logged: set[str] = set()
_lock = threading.Lock()


def collect(spec: RequestSpec, conf: cfg.ConfigOpts,
            filters: Iterable[BaseHostFilter], log: bool = True
            ) -> list[str]:
    """The warnings about ``spec``; with ``log``, each logged the first
    time it is seen."""
    known = (conf.metrics.extra_specs_scope,
             capability_specs.CAPABILITIES_SCOPE)
    warnings = [
        f"extra spec {key} ignored: the scheduler reads no scope "
        f"{key.partition(':')[0]}:; did you mean {meant}:?"
        for key, meant in extra_specs.misspelt_scopes(
            spec.flavor.extra_specs, known)]
    for host_filter in filters:
        warnings.extend(plugin_guard.hook(host_filter, "warnings", spec))
    if log:
        _log_new(warnings)
    return warnings


def _log_new(warnings: list[str]) -> None:
    """Log the warnings not logged before, at most ``PER_REQUEST`` of
    them, then one line counting the rest: the keys are the client's,
    and a request with 1,000 unscoped keys must not write 1,000 lines."""
    with _lock:
        new = [w for w in dict.fromkeys(warnings) if w not in _logged]
        if len(_logged) + len(new) > _LOGGED_LIMIT:
            _logged.clear()
        # The rest too: the next request with the same keys logs nothing.
        _logged.update(new[:_LOGGED_LIMIT])
    for warning in new[:PER_REQUEST]:
        LOG.warning("%s", warning)
    if len(new) > PER_REQUEST:
        LOG.warning("%d more warning(s) about this request's extra specs "
                    "not logged; 'scheduler-manage explain' lists them all",
                    len(new) - PER_REQUEST)
