"""power_saving: relieve busy hosts and empty idle ones."""

from scheduler.balancer import base


class PowerSavingBalancer(base.BaseBalancer):
    """Like even_distribution, and also empties hosts whose cpu.percent
    stayed below LowUtilization for CpuOverCommitDurationMinutes."""

    PARAMETERS = (base.HIGH_UTILIZATION, base.LOW_UTILIZATION, base.DURATION)
