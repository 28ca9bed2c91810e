"""Filters placing an instance relative to other instances.

``same_host`` / ``different_host`` hints name instances; server groups
with a hard ``affinity`` / ``anti-affinity`` policy name a group. The
soft policies are weighers (``scheduler.weights.affinity``).
"""

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.hosts.state import HostState
from scheduler.request.spec import RequestSpec


def _holds_group_member(host: HostState, spec: RequestSpec) -> bool:
    # instance_groups also covers members placed earlier in this very
    # request, which may not have reached spec.group_hosts.
    return (host.host in spec.group_hosts
            or spec.group in host.instance_groups)


class SameHostFilter(BaseHostFilter):
    """With the ``same_host`` hint (one instance uuid or a list), keeps
    only hosts running at least one of those instances."""

    def applies(self, spec: RequestSpec) -> bool:
        return bool(spec.hint_list("same_host"))

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        wanted = spec.hint_list("same_host")
        if not wanted or host.instances.intersection(wanted):
            return None
        return Rejection("not with same_host instances",
                         "none of " + ", ".join(sorted(wanted)))


class DifferentHostFilter(BaseHostFilter):
    """With the ``different_host`` hint (one instance uuid or a list),
    rejects hosts running any of those instances."""

    def applies(self, spec: RequestSpec) -> bool:
        return bool(spec.hint_list("different_host"))

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        present = host.instances.intersection(
            spec.hint_list("different_host"))
        if not present:
            return None
        return Rejection("has different_host instances",
                         "runs " + ", ".join(sorted(present)))


class ServerGroupAffinityFilter(BaseHostFilter):
    """For a server group (``group`` hint) with ``group_policy`` =
    ``affinity``, keeps only hosts already running a member
    (``spec.group_hosts``); the first member may go anywhere."""

    def applies(self, spec: RequestSpec) -> bool:
        return spec.group_policy == "affinity" and bool(spec.group)

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        if spec.group_policy != "affinity" or not spec.group:
            return None
        if not spec.group_hosts or _holds_group_member(host, spec):
            return None
        return Rejection("server group affinity",
                         f"group {spec.group} is on "
                         + ", ".join(sorted(spec.group_hosts)))


class ServerGroupAntiAffinityFilter(BaseHostFilter):
    """For a server group (``group`` hint) with ``group_policy`` =
    ``anti-affinity``, rejects hosts already running a member."""

    def applies(self, spec: RequestSpec) -> bool:
        return spec.group_policy == "anti-affinity" and bool(spec.group)

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        if spec.group_policy != "anti-affinity" or not spec.group:
            return None
        if not _holds_group_member(host, spec):
            return None
        return Rejection("server group anti-affinity",
                         f"group {spec.group} already has a member here")
