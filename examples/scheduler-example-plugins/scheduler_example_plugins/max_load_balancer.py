"""max_load: move instances off hosts whose load average is too high."""

from collections.abc import Iterator
from collections.abc import Sequence

from scheduler.plugins import HIGH_UTILIZATION
from scheduler.plugins import BaseBalancer
from scheduler.plugins import HostLoad
from scheduler.plugins import Proposal
from scheduler.plugins import UtilizationHistory
from scheduler_example_plugins import LOAD_1M


def load_percent(host: HostLoad) -> float | None:
    """``loadavg.1m`` per vCPU, in percent; None when not fresh."""
    # The planner sets cpu_percent to None when the host's report is
    # older than [metrics] max_age; the load average is in that report.
    load = host.state.metric_since(LOAD_1M, None)
    if host.cpu_percent is None or load is None or host.state.vcpus <= 0:
        return None
    return 100.0 * load / host.state.vcpus


class MaxLoadBalancer(BaseBalancer):
    """Moves an instance off a host whose ``loadavg.1m`` per vCPU, in
    percent, is at least HighUtilization (``[policy:NAME]
    balancer_parameters``), to hosts that stay below HighUtilization
    with the instance's vCPUs added.

    The most loaded host goes first, its smallest instance first;
    destinations are offered least loaded first. Only the latest report
    is judged: the load average is already a one-minute average.
    """

    PARAMETERS = (HIGH_UTILIZATION,)

    def propose(self, hosts: Sequence[HostLoad],
                history: UtilizationHistory
                ) -> Iterator[Proposal]:
        high = self.params[HIGH_UTILIZATION]
        loads = {host.node_id: percent for host in hosts
                 if (percent := load_percent(host)) is not None}
        sources = sorted(
            (host for host in hosts if host.can_migrate and host.instances
             and loads.get(host.node_id, 0.0) >= high),
            key=lambda host: (-loads[host.node_id], host.state.host))
        for source in sources:
            for instance in sorted(source.instances,
                                   key=lambda instance: instance.vcpus):
                destinations = tuple(sorted(
                    (host for host in hosts
                     if host is not source and host.can_migrate
                     and host.node_id in loads
                     and loads[host.node_id] + host.share(instance.vcpus)
                     < high),
                    key=lambda host: (loads[host.node_id], host.state.host)))
                if destinations:
                    yield Proposal(source, instance, destinations)
