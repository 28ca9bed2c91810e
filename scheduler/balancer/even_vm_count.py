"""even_vm_count: even out the number of instances per host."""

from scheduler.balancer import base


class EvenVmCountBalancer(base.BaseBalancer):
    """Moves an instance off a host with more than HighVmCount instances
    and at least MigrationThreshold more than the least loaded host."""

    PARAMETERS = (base.HIGH_VM_COUNT, base.MIGRATION_THRESHOLD)
