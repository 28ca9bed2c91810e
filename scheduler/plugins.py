"""The one import a plugin needs: what filters, weighers and balancers
are written against (docs/plugin-guide.md).

    from scheduler.plugins import BaseHostFilter, HostState, RequestSpec

Filters and weighers read a ``HostState`` per host, or the columns of
the ``HostTable``; balancers get ``HostLoad`` rows and the utilisation
history, and yield ``Proposal``s. Names not listed here are the
scheduler's own and may change between releases.
"""

from scheduler.balancer.base import ALL_PARAMETERS
from scheduler.balancer.base import COOLDOWN
from scheduler.balancer.base import DURATION
from scheduler.balancer.base import HIGH_UTILIZATION
from scheduler.balancer.base import HIGH_VM_COUNT
from scheduler.balancer.base import LOAD_WINDOW
from scheduler.balancer.base import LOW_UTILIZATION
from scheduler.balancer.base import MIGRATION_THRESHOLD
from scheduler.balancer.base import RECURRENCE_WINDOW
from scheduler.balancer.base import SAFETY_MARGIN
from scheduler.balancer.base import BaseBalancer
from scheduler.balancer.base import HostLoad
from scheduler.balancer.base import Instance
from scheduler.balancer.base import Parameter
from scheduler.balancer.base import Proposal
from scheduler.balancer.history import UtilizationHistory
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.hosts import change_kinds
from scheduler.hosts.state import MIB
from scheduler.hosts.state import HostState
from scheduler.hosts.state import Metric
from scheduler.hosts.state import MetricsWindow
from scheduler.hosts.state import is_number
from scheduler.hosts.state import metrics_window
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import fresh_metric
from scheduler.request.spec import Flavor
from scheduler.request.spec import RequestSpec
from scheduler.weights import BaseHostWeigher

__all__ = [
    "ALL_PARAMETERS", "COOLDOWN", "DURATION", "HIGH_UTILIZATION",
    "HIGH_VM_COUNT", "LOAD_WINDOW", "LOW_UTILIZATION", "MIB",
    "MIGRATION_THRESHOLD", "RECURRENCE_WINDOW", "SAFETY_MARGIN",
    "BaseBalancer",
    "BaseHostFilter", "BaseHostWeigher", "Flavor", "HostLoad", "HostState",
    "HostTable", "Instance", "Metric", "MetricsWindow", "Parameter",
    "Proposal", "Rejection", "RequestSpec", "UtilizationHistory",
    "change_kinds", "fresh_metric", "is_number", "metrics_window",
]
