"""One placement decided without claiming: ``scheduler-manage explain``
and the API's ``POST /v1/explain`` both call ``explain()``, so that the
console shows the choice the command prints.

The filters and weighers are those of the cluster's policy as a worker
has it now (``[scheduler] cluster_policies`` and ``default_policy``,
with what the API stored winning), else ``[filter_scheduler]``'s.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from oslo_config import cfg

from scheduler.engine import filter_scheduler
from scheduler.hosts import problems
from scheduler.policies import store as policy_store

if TYPE_CHECKING:
    from scheduler.hosts.cache.manager import HostManager
    from scheduler.request.spec import RequestSpec


@dataclasses.dataclass
class Explained:
    """The decision's document (``Decision.as_dict()`` plus ``policy``,
    the label of the policy that decided or None) and, when the fleet is
    empty or the cluster has no node, why, in one line."""

    document: dict
    problem: str | None


def explain(conf: cfg.ConfigOpts, spec: RequestSpec,
            host_manager: HostManager | None = None) -> Explained:
    """The decision for the first instance of ``spec`` against the
    database (``host_manager``'s cache when given, else a fresh read);
    nothing claimed. Raises ConfigError for an unusable policy and
    InvalidRequest for a spec its filters refuse."""
    policy = policy_store.current_policy_set(conf).for_cluster(spec.cluster)
    scheduler = filter_scheduler.FilterScheduler(
        conf, host_manager=host_manager,
        pipeline=None if policy is None else policy.pipeline())
    decision = scheduler.explain(spec)
    hosts = [r.host for r in decision.results]
    problem = (problems.no_host_registered(conf) if not hosts
               else problems.unknown_cluster(spec.cluster, hosts))
    document = decision.as_dict()
    # As the service's explain answers: which policy decided.
    document["policy"] = None if policy is None else policy.label
    return Explained(document, problem)
