"""even_vm_count: even out the number of instances per host."""

from collections.abc import Iterator
from collections.abc import Sequence

from scheduler.balancer import base
from scheduler.balancer import history as history_mod


class EvenVmCountBalancer(base.BaseBalancer):
    """Moves an instance off a host with more than HighVmCount instances
    and at least MigrationThreshold more than the least loaded host, to a
    host with at least two fewer (so that the move cannot be undone by the
    next tick). Counts include the migrations under way.

    The most loaded host goes first, the instance cheapest to migrate
    (least memory, measured when fresh, else claimed) first, then the
    least busy and smallest; destinations are offered fewest instances
    first. Host CPU utilisation is not looked at.
    """

    PARAMETERS = (base.HIGH_VM_COUNT, base.MIGRATION_THRESHOLD)

    def propose(self, hosts: Sequence[base.HostLoad],
                history: history_mod.UtilizationHistory
                ) -> Iterator[base.Proposal]:
        if not hosts:
            return
        fewest = min(host.instance_count for host in hosts)
        sources = sorted(
            (host for host in hosts if host.can_migrate and host.instances
             and host.instance_count > self.params[base.HIGH_VM_COUNT]
             and host.instance_count - fewest
             >= self.params[base.MIGRATION_THRESHOLD]),
            key=lambda host: (-host.instance_count, host.state.host))
        for source in sources:
            destinations = tuple(sorted(
                (host for host in hosts if host.can_migrate
                 and host.instance_count <= source.instance_count - 2),
                key=lambda host: (host.instance_count, host.state.host)))
            if not destinations:
                continue
            for instance in sorted(source.instances,
                                   key=lambda instance: (
                                       instance.migration_cost,
                                       instance.load, instance.vcpus,
                                       instance.uuid)):
                yield base.Proposal(source, instance, destinations)
