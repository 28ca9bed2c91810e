"""Soft server-group (anti-)affinity weighers.

The hard policies are filters; the soft ones only move hosts up or down.
``HostState`` records which groups have members on a host, not how many,
so a host weighs 1 (it holds members) or 0.
"""

from scheduler.hosts.state import HostState
from scheduler.request.spec import RequestSpec
from scheduler.weights import BaseHostWeigher


def _holds_group(host: HostState, spec: RequestSpec) -> bool:
    return spec.group in host.instance_groups


class ServerGroupSoftAffinityWeigher(BaseHostWeigher):
    """For ``group_policy=soft-affinity`` (scheduler hint with a
    ``group``): hosts already holding members of the group weigh 1.0,
    others 0.0. Scaled by ``[filter_scheduler]
    soft_affinity_weight_multiplier``."""

    def applies(self, spec: RequestSpec) -> bool:
        return spec.group_policy == "soft-affinity" and bool(spec.group)

    def multiplier(self, spec: RequestSpec) -> float:
        return self.conf.filter_scheduler.soft_affinity_weight_multiplier

    def raw_weight(self, host: HostState, spec: RequestSpec) -> float:
        return 1.0 if _holds_group(host, spec) else 0.0


class ServerGroupSoftAntiAffinityWeigher(BaseHostWeigher):
    """For ``group_policy=soft-anti-affinity`` (scheduler hint with a
    ``group``): hosts holding members of the group weigh -1.0, others
    0.0, so hosts without members come first. Scaled by
    ``[filter_scheduler] soft_anti_affinity_weight_multiplier``."""

    def applies(self, spec: RequestSpec) -> bool:
        return spec.group_policy == "soft-anti-affinity" and bool(spec.group)

    def multiplier(self, spec: RequestSpec) -> float:
        options = self.conf.filter_scheduler
        return options.soft_anti_affinity_weight_multiplier

    def raw_weight(self, host: HostState, spec: RequestSpec) -> float:
        return -1.0 if _holds_group(host, spec) else 0.0
