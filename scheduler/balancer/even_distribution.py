"""even_distribution: move instances off hosts that stayed busy."""

from scheduler.balancer import base


class EvenDistributionBalancer(base.BaseBalancer):
    """Moves an instance off a host whose cpu.percent stayed >=
    HighUtilization for CpuOverCommitDurationMinutes."""

    PARAMETERS = (base.HIGH_UTILIZATION, base.DURATION)
