"""Plays a migration policy's convergence schedule for one migration.

For a hypervisor agent: ``initial_actions()`` before the migration
starts, then ``on_stalled(count)`` each time the hypervisor reports that
the migration has stalled ``count`` iterations. Pure: no clock, no I/O.

Semantics (oVirt/VDSM): the convergence items fire in order, each once,
when ``count`` reaches its stallingLimit; after the last one, each further
stalled iteration fires the next of lastItems. At most one action per
report, so that every action gets an iteration to take effect (a report
that skips counts does not fire a downtime and the abort after it at
once). Nothing fires after abort or postcopy.
"""

import collections

from scheduler.policies.migration import policies


class Convergence:
    """The not yet taken actions of one migration's schedule."""

    def __init__(self, policy: policies.MigrationPolicy):
        schedule = policy.schedule
        self._initial: tuple[policies.Action, ...] = ()
        # (stalled iterations needed, action), in firing order.
        self._pending: collections.deque[tuple[int, policies.Action]] = (
            collections.deque())
        if schedule is None:
            return
        self._initial = schedule.initial_items
        self._pending.extend((item.stalling_limit, item.action)
                             for item in schedule.convergence_items)
        last_limit = (schedule.convergence_items[-1].stalling_limit
                      if schedule.convergence_items else 0)
        self._pending.extend((last_limit + number, action) for number, action
                             in enumerate(schedule.last_items, start=1))

    def initial_actions(self) -> list[policies.Action]:
        return list(self._initial)

    def on_stalled(self, count: int) -> list[policies.Action]:
        """The action to take now that the migration stalled ``count``
        iterations: an empty list or one action."""
        if not self._pending or self._pending[0][0] > count:
            return []
        _, action = self._pending.popleft()
        if action.action in policies.FINAL_ACTIONS:
            self._pending.clear()
        return [action]

    @property
    def finished(self) -> bool:
        """True once every action was taken (or a final one was)."""
        return not self._pending
