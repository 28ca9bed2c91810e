"""power_saving: relieve busy hosts and empty idle ones."""

from collections.abc import Iterator
from collections.abc import Sequence

from scheduler.balancer import base
from scheduler.balancer import even_distribution
from scheduler.balancer import history as history_mod


class PowerSavingBalancer(even_distribution.EvenDistributionBalancer):
    """Relieves over-utilised hosts as even_distribution does; when none
    is, empties a host whose cpu.percent stayed below LowUtilization for
    CpuOverCommitDurationMinutes, one instance per tick, so that it can be
    switched off.

    Destinations, in both cases, stay under HighUtilization with the
    instance added and are neither under-utilised nor below
    LowUtilization now: load never goes to a host that is itself being
    emptied (no ping-pong). The host closest to empty is emptied first,
    the instance with the largest load (measured or assumed, as
    even_distribution counts it) first, while destinations have most
    room.
    """

    PARAMETERS = (base.HIGH_UTILIZATION, base.LOW_UTILIZATION, base.DURATION)

    def propose(self, hosts: Sequence[base.HostLoad],
                history: history_mod.UtilizationHistory
                ) -> Iterator[base.Proposal]:
        receivers = self.receivers(hosts, history)
        if any(self.over_utilized(host, history) for host in hosts):
            # Hosts are emptied only once no host is too busy.
            yield from self.relieve(hosts, history, receivers)
            return
        yield from self._empty(hosts, history, receivers)

    def receivers(self, hosts: Sequence[base.HostLoad],
                  history: history_mod.UtilizationHistory
                  ) -> list[base.HostLoad]:
        low = self.params[base.LOW_UTILIZATION]
        return [host for host in super().receivers(hosts, history)
                if host.cpu_percent >= low
                and not self.under_utilized(host, history)]

    def under_utilized(self, host: base.HostLoad,
                       history: history_mod.UtilizationHistory) -> bool:
        low = self.params[base.LOW_UTILIZATION]
        return (host.cpu_percent is not None and host.cpu_percent < low
                and history.stayed_below(host.node_id, low,
                                         self.params[base.DURATION]))

    def _empty(self, hosts: Sequence[base.HostLoad],
               history: history_mod.UtilizationHistory,
               receivers: Sequence[base.HostLoad]
               ) -> Iterator[base.Proposal]:
        high = self.params[base.HIGH_UTILIZATION]
        sources = sorted(
            (host for host in hosts if host.can_migrate and host.instances
             and self.under_utilized(host, history)),
            key=lambda host: (host.instance_count, host.cpu_percent,
                              host.state.host))
        yield from self.moves(sources, _heaviest_first, receivers, high)


def _heaviest_first(source: base.HostLoad) -> list[base.Instance]:
    return sorted(source.instances, key=lambda instance: (
        -instance.load, -instance.vcpus, instance.uuid))
