"""The names plugins and callers have always imported from here.

Host states, the plugin API, now live in ``scheduler.hosts.state``, and the
host cache that builds them in ``scheduler.hosts.cache``; this module
re-exports them, so that ``scheduler.host_manager.HostState`` (as the
plugin guide shows) and ``HostManager`` keep working.
"""

from scheduler.hosts.cache.manager import HostManager
from scheduler.hosts.cache.manager import RefreshStats
from scheduler.hosts.metric_entries import reading
from scheduler.hosts.state import MIB
from scheduler.hosts.state import HostState
from scheduler.hosts.state import Metric
from scheduler.hosts.state import MetricsWindow
from scheduler.hosts.state import is_number
from scheduler.hosts.state import metrics_window
from scheduler.hosts.state import seconds_before
from scheduler.hosts.state import snapshot
from scheduler.hosts.state import stale_before

__all__ = ["MIB", "HostManager", "HostState", "Metric", "MetricsWindow",
           "RefreshStats", "is_number", "metrics_window", "reading",
           "seconds_before", "snapshot", "stale_before"]
