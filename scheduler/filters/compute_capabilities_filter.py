"""ComputeCapabilitiesFilter: host attributes must meet the flavor's
``capabilities:`` extra specs."""

import collections.abc
import dataclasses

from scheduler import extra_specs
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.host_manager import HostState
from scheduler.request_spec import RequestSpec

# Nova's names for attributes this project calls differently.
_ALIASES = {
    "hypervisor_hostname": "nodename",
    "vcpus_total": "vcpus",
    "vcpus_used": "vcpus_claimed",
    "local_gb": "disk_gb",
}

# Data attributes only: a flavor must not reach methods or internals.
# Metrics are left to the resources scope, which knows about staleness
# and pending claims.
_ATTRIBUTES = frozenset(
    {field.name for field in dataclasses.fields(HostState)}
    | {name for name, value in vars(HostState).items()
       if isinstance(value, property)}) - {"metrics", "bad_metrics"}

_MISSING = object()


def lookup(host: HostState, path: tuple[str, ...]) -> object:
    """The value at ``path`` (attribute, then keys of nested dicts), or
    ``_MISSING``; an attribute set to None counts as missing."""
    name = _ALIASES.get(path[0], path[0])
    if name not in _ATTRIBUTES:
        return _MISSING
    value = getattr(host, name, None)
    for key in path[1:]:
        if not isinstance(value, collections.abc.Mapping) or key not in value:
            return _MISSING
        value = value[key]
    return _MISSING if value is None else value


class ComputeCapabilitiesFilter(BaseHostFilter):
    """Rejects hosts whose attributes do not meet the flavor's
    ``capabilities:`` extra specs (and, as in Nova, its keys without a
    scope).

    ``capabilities:vcpus``, ``capabilities:cluster`` ... name HostState
    attributes (``hypervisor_hostname`` is the nodename); further ``:``
    parts walk into dicts: ``capabilities:cpu_info:topology:cores``. Values
    use Nova's operators (``s== x86_64``, ``>= 8``, ``<in> avx2`` ...,
    see ``scheduler.extra_specs.match_capability``). A host without the
    attribute is rejected. Keys of other scopes are ignored.
    """

    def applies(self, spec: RequestSpec) -> bool:
        return bool(extra_specs.capability_specs(spec.flavor.extra_specs))

    def validate_request(self, spec: RequestSpec) -> None:
        extra_specs.validate_capability_specs(spec.flavor.extra_specs)

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        for cap in extra_specs.validate_capability_specs(
                spec.flavor.extra_specs):
            actual = lookup(host, cap.path)
            if actual is _MISSING:
                return Rejection(str(cap), f"host has no {cap.attribute}")
            if not extra_specs.match_capability(actual, cap.requirement):
                return Rejection(
                    str(cap), f"host has {cap.attribute}={actual!r}")
        return None
