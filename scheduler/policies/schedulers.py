"""The filter schedulers of the cluster policies in use: one set per
service, owned by the manager and lent to the balance planner.

``PolicySchedulers`` keeps one ``FilterScheduler`` per policy (and one of
``[filter_scheduler]`` for clusters without a policy), all sharing one
host cache; a new policy set (the REST API's) rebuilds the schedulers of
new or changed policies only (``use``).
"""

from oslo_config import cfg

from scheduler.engine import filter_scheduler
from scheduler.hosts.cache.manager import HostManager
from scheduler.policies import cluster as cluster_policy


class PolicySchedulers:
    """The policies in use and their filter schedulers, swapped as one so
    that a caller never sees one without the other.

    ``default`` serves clusters without a policy (built from
    ``[filter_scheduler]`` when not given). Thread-safe: readers take
    one snapshot; ``use`` replaces it.
    """

    def __init__(self, conf: cfg.ConfigOpts, host_manager: HostManager,
                 policies: cluster_policy.PolicySet,
                 default: filter_scheduler.FilterScheduler | None = None):
        self.conf = conf
        self.host_manager = host_manager
        self._active = (policies, policies.schedulers(
            conf, host_manager, default=default))

    @property
    def policies(self) -> cluster_policy.PolicySet:
        """The policies in use."""
        return self._active[0]

    def for_cluster(self, cluster: str | None
                    ) -> tuple[cluster_policy.ClusterPolicy | None,
                               filter_scheduler.FilterScheduler]:
        """The cluster's policy (None: ``[filter_scheduler]``) and the
        filter scheduler that decides for it."""
        policies, schedulers = self._active
        name = policies.name_for(cluster)
        policy = None if name is None else policies.policies[name]
        return policy, schedulers[name]

    def for_policy(self, name: str | None
                   ) -> filter_scheduler.FilterScheduler:
        """The filter scheduler of policy ``name`` (None:
        ``[filter_scheduler]``)."""
        return self._active[1][name]

    def use(self, policies: cluster_policy.PolicySet) -> None:
        """Put ``policies`` in use: new filter schedulers for new or
        changed policies only, then one swap."""
        old_policies, old = self._active
        if policies is old_policies:
            return
        self._active = (policies, policies.schedulers(
            self.conf, self.host_manager, default=old[None],
            previous=(old_policies, old)))
