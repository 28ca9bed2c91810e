"""steady_load: move an instance only off a host that stayed busy on
average, and only to a host that stays well under HighUtilization."""

import datetime
from collections.abc import Iterator
from collections.abc import Sequence

from scheduler.balancer import base
from scheduler.balancer import history as history_mod
from scheduler.common import clock


class SteadyLoadBalancer(base.BaseBalancer):
    """Moves an instance off a host whose *persistent* load is at or above
    HighUtilization, to a host whose persistent load stays under
    HighUtilization minus SafetyMargin with the instance added.

    Parameters: HighUtilization, LoadWindowMinutes, SafetyMargin,
    MoveCooldownMinutes, RecurrenceWindowMinutes.

    A host's persistent load is its mean cpu.percent over the last
    LoadWindowMinutes of history, shifted by what changed since its newest
    sample (the claims made since, the migrations leaving it:
    ``HostLoad.cpu_percent`` minus that sample).

    - Source: its samples cover the whole window, its persistent load is
      >= HighUtilization and so is its cpu.percent now. One hot reading
      alone moves nothing; a host a completed move relieved within the
      window (its mean still holds the load that left) is not relieved
      twice. With RecurrenceWindowMinutes (0: off), a host hot now that
      was hot for LoadWindowMinutes in all within that longer window is
      a source too, relieved from its load now: short heat that keeps
      coming back, which no window's mean sees. The highest load to
      relieve goes first.
    - Instance: not one that arrived on the host (placed, or moved there)
      less than MoveCooldownMinutes ago. First those whose departure
      brings the load to relieve under HighUtilization, measured before
      assumed (an assumed instance may relieve nothing), cheapest to
      migrate first; only when none is, the heaviest measured load
      first.
    - Destination: the larger of its persistent load and its load now,
      plus the instance's load, stays under HighUtilization minus
      SafetyMargin: never a host the move makes hot, nor one hot now.

    An instance's load is its fresh ``instance.cpu.percent`` (momentary:
    no per-instance history is kept yet), else all its vCPUs
    (``base.Instance.load``). The planner plans at most one migration per
    cluster and tick, so one proposal taken per tick is the limit.
    """

    PARAMETERS = (base.HIGH_UTILIZATION, base.LOAD_WINDOW,
                  base.SAFETY_MARGIN, base.COOLDOWN, base.RECURRENCE_WINDOW)

    def propose(self, hosts: Sequence[base.HostLoad],
                history: history_mod.UtilizationHistory
                ) -> Iterator[base.Proposal]:
        high = self.params[base.HIGH_UTILIZATION]
        persistent = {host.node_id: self.persistent_load(host, history)
                      for host in hosts}
        pressure = {host.node_id: self.pressure(
                        host, persistent[host.node_id], history)
                    for host in hosts if host.can_migrate and host.instances}
        sources = sorted(
            (host for host in hosts
             if pressure.get(host.node_id) is not None),
            key=lambda host: (-pressure[host.node_id], host.state.host))
        receivers = [host for host in hosts
                     if host.can_migrate and host.cpu_percent is not None]
        limit = high - self.params[base.SAFETY_MARGIN]
        settled_before = clock.utcnow() - datetime.timedelta(
            minutes=self.params[base.COOLDOWN])
        for source in sources:
            movable = [instance for instance in source.instances
                       if instance.arrived_at is None
                       or instance.arrived_at <= settled_before]
            for instance in _relief_order(
                    source, movable, pressure[source.node_id], high):
                destinations = tuple(
                    host for host in receivers if host is not source
                    and _stays_under(host, persistent[host.node_id],
                                     instance, limit))
                if destinations:
                    yield base.Proposal(source, instance, destinations)

    def persistent_load(self, host: base.HostLoad,
                        history: history_mod.UtilizationHistory
                        ) -> float | None:
        """The host's mean cpu.percent over LoadWindowMinutes, shifted by
        the change since its newest sample; its cpu.percent now when it
        has no sample; None without a fresh cpu.percent."""
        if host.cpu_percent is None:
            return None
        mean = history.mean_over(host.node_id,
                                 self.params[base.LOAD_WINDOW])
        latest = history.latest(host.node_id)
        if mean is None or latest is None:
            return host.cpu_percent
        return max(mean + host.cpu_percent - latest.cpu_percent, 0.0)

    def pressure(self, host: base.HostLoad, persistent: float | None,
                 history: history_mod.UtilizationHistory) -> float | None:
        """The load to relieve on a source, or None when ``host`` is no
        source: at or above HighUtilization now, and either on its mean
        over the whole LoadWindowMinutes, or (RecurrenceWindowMinutes)
        hot for LoadWindowMinutes in all within that longer window: heat
        that comes back, short each time, which no mean catches."""
        high = self.params[base.HIGH_UTILIZATION]
        if host.cpu_percent is None or host.cpu_percent < high:
            return None
        window = self.params[base.LOAD_WINDOW]
        if persistent is not None and persistent >= high and \
                history.covers(host.node_id, window):
            return persistent
        recurrence = self.params[base.RECURRENCE_WINDOW]
        if recurrence and history.minutes_at_least(
                host.node_id, high, recurrence) >= window:
            return host.cpu_percent
        return None


def _stays_under(host: base.HostLoad, persistent: float | None,
                 instance: base.Instance, limit: float) -> bool:
    """True when ``host`` stays under ``limit`` with ``instance``, judged
    by the larger of its persistent load and its load now."""
    if persistent is None or host.cpu_percent is None:
        return False
    return (max(persistent, host.cpu_percent)
            + host.share(instance.load) < limit)


def _relief_order(source: base.HostLoad,
                  instances: Sequence[base.Instance], persistent: float,
                  high: float) -> list[base.Instance]:
    """``instances`` that bring ``persistent`` under ``high`` by leaving:
    measured first, then the cheapest to migrate, then the lightest (it
    burdens its destination least). Only when none does, all of them,
    measured first, heaviest load first (it relieves most).

    When some instance is enough but none of those has a safe
    destination, a lighter one is not moved instead: it would leave the
    host hot and call for another move (on the sample trace with the CPU
    model such moves took the migrations from 76 to 129 and the hot
    host-minutes up, not down)."""
    enough = sorted(
        (instance for instance in instances
         if persistent - source.share(instance.load) < high),
        key=lambda instance: (instance.cpu_percent is None,
                              instance.migration_cost, instance.load,
                              instance.uuid))
    if enough:
        return enough
    return sorted(instances, key=lambda instance: (
        instance.cpu_percent is None, -instance.load,
        instance.migration_cost, instance.uuid))
