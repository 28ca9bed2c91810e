"""even_distribution: move instances off hosts that stayed busy."""

from collections.abc import Iterator
from collections.abc import Sequence

from scheduler.balancer import base
from scheduler.balancer import history as history_mod


class EvenDistributionBalancer(base.BaseBalancer):
    """Moves an instance off a host whose cpu.percent stayed >=
    HighUtilization for CpuOverCommitDurationMinutes (and is still that
    high, counting the migrations already leaving it), to a host that
    stays under HighUtilization with the instance's vCPUs added.

    An instance's load is its fresh ``instance.cpu.percent`` when its
    node reports one, else all its vCPUs (``base.Instance.load``), both
    for what its departure relieves and for what it adds to the
    destination. The busiest host goes first. Of its instances, those
    whose departure brings it under HighUtilization are preferred, the
    cheapest to migrate (least memory) first; else the one with the
    largest load, which relieves it most. Hosts without a fresh
    cpu.percent are neither sources nor destinations.
    """

    PARAMETERS = (base.HIGH_UTILIZATION, base.DURATION)

    def propose(self, hosts: Sequence[base.HostLoad],
                history: history_mod.UtilizationHistory
                ) -> Iterator[base.Proposal]:
        yield from self.relieve(hosts, history, self.receivers(hosts,
                                                               history))

    def receivers(self, hosts: Sequence[base.HostLoad],
                  history: history_mod.UtilizationHistory
                  ) -> list[base.HostLoad]:
        """Hosts that may take an instance, given room under
        HighUtilization."""
        return [host for host in hosts
                if host.can_migrate and host.cpu_percent is not None]

    def over_utilized(self, host: base.HostLoad,
                      history: history_mod.UtilizationHistory) -> bool:
        high = self.params[base.HIGH_UTILIZATION]
        return (host.cpu_percent is not None and host.cpu_percent >= high
                and history.stayed_at_least(host.node_id, high,
                                            self.params[base.DURATION]))

    def relieve(self, hosts: Sequence[base.HostLoad],
                history: history_mod.UtilizationHistory,
                receivers: Sequence[base.HostLoad]
                ) -> Iterator[base.Proposal]:
        """Proposals that move load off the over-utilised hosts."""
        high = self.params[base.HIGH_UTILIZATION]
        sources = sorted(
            (host for host in hosts if host.can_migrate and host.instances
             and self.over_utilized(host, history)),
            key=lambda host: (-host.cpu_percent, host.state.host))
        yield from self.moves(
            sources, lambda source: _relief_order(source, high), receivers,
            high)


def _relief_order(source: base.HostLoad,
                  high: float) -> list[base.Instance]:
    """The instances that bring ``source`` under ``high`` by leaving,
    cheapest to migrate first (then the lightest, which burdens its
    destination least), then the others, heaviest load first."""
    enough = sorted((instance for instance in source.instances
                     if source.cpu_without(instance) < high),
                    key=lambda instance: (instance.migration_cost,
                                          instance.load, instance.uuid))
    rest = sorted((instance for instance in source.instances
                   if instance not in enough),
                  key=lambda instance: (-instance.load,
                                        instance.migration_cost,
                                        instance.uuid))
    return enough + rest
