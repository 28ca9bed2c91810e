"""Placement: claiming the hosts a decision chose.

* ``placer.Placer``: claim a decision's candidates in order (the chosen
  host, else the alternates) for what is wanted (``placer.Wanted``: the
  consumer, its usage, its group), take the claim into the host cache,
  roll back what a failure left; used by both the manager and the
  balance planner.
* ``rounds.RequestPlacement``: one request's claim rounds (decide, claim,
  decide again), existing claims handed back, rollback on failure.
* ``lock``: the cluster lock mode and its hold deadline.
* ``pending``: retrying a request while pending claims may free room.
* ``entries``: the reply entries of ``select_destinations``.
* ``errors``: LockHoldTimeout, database errors as callers see them.

The claims store and deferred releases are ``scheduler.claims``. Nothing
here imports the manager, the balancer or the RPC layer.
"""

from scheduler.placement.errors import LockHoldTimeout
from scheduler.placement.errors import database_errors
from scheduler.placement.placer import Placer
from scheduler.placement.placer import Wanted

__all__ = ["LockHoldTimeout", "Placer", "Wanted", "database_errors"]
