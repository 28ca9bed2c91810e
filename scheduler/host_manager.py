"""The names plugins and callers have always imported from here.

Host states, the plugin API, now live in ``scheduler.host_state``, and the
host cache that builds them in ``scheduler.host_cache``; this module
re-exports them, so that ``scheduler.host_manager.HostState`` (as the
plugin guide shows) and ``HostManager`` keep working.
"""

from scheduler.host_cache.manager import HostManager
from scheduler.host_cache.manager import RefreshStats
from scheduler.host_state import MIB
from scheduler.host_state import HostState
from scheduler.host_state import Metric
from scheduler.host_state import MetricsWindow
from scheduler.host_state import is_number
from scheduler.host_state import metrics_window
from scheduler.host_state import seconds_before
from scheduler.host_state import snapshot
from scheduler.host_state import stale_before
from scheduler.metric_entries import reading

__all__ = ["MIB", "HostManager", "HostState", "Metric", "MetricsWindow",
           "RefreshStats", "is_number", "metrics_window", "reading",
           "seconds_before", "snapshot", "stale_before"]
