"""ComputeCapabilitiesFilter: host attributes must meet the flavor's
``capabilities:`` extra specs."""

import collections.abc
import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from scheduler import extra_specs
from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.host_manager import HostState
from scheduler.host_table import HostTable
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
    return _value(host, _attribute(path), path[1:])


def _attribute(path: tuple[str, ...]) -> str | None:
    """The HostState data attribute ``path`` starts with, or None."""
    name = _ALIASES.get(path[0], path[0])
    return name if name in _ATTRIBUTES else None


def _value(host: HostState, attribute: str | None,
           keys: tuple[str, ...]) -> object:
    """``lookup()`` with the path's attribute already resolved."""
    if attribute is None:
        return _MISSING
    value = getattr(host, attribute, None)
    for key in keys:
        # dict first: the Mapping ABC check costs ten times more.
        if (not isinstance(value, (dict, collections.abc.Mapping))
                or key not in value):
            return _MISSING
        value = value[key]
    return _MISSING if value is None else value


class _Check(NamedTuple):
    """One capabilities extra spec, resolved and parsed for a request."""

    cap: extra_specs.CapabilitySpec
    attribute: str | None
    keys: tuple[str, ...]
    requirement: extra_specs.Requirement

    def rejection(self, actual: object) -> Rejection:
        """Why a host whose value is ``actual`` fails this check."""
        cap = self.cap
        if actual is _MISSING:
            return Rejection(str(cap), f"host has no {cap.attribute}")
        return Rejection(str(cap), f"host has {cap.attribute}={actual!r}")


def _checks(spec: RequestSpec) -> list[_Check]:
    return [_Check(cap, _attribute(cap.path), cap.path[1:],
                   extra_specs.parse_requirement(cap.requirement))
            for cap in extra_specs.validate_capability_specs(
                spec.flavor.extra_specs)]


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

    def rejections(self, hosts: Sequence[HostState],
                   spec: RequestSpec) -> list[Rejection | None]:
        # Parsed and resolved once per request, not for every host.
        checks = spec.memo("ComputeCapabilitiesFilter",
                           lambda: _checks(spec))
        rejections: list[Rejection | None] = []
        for host in hosts:
            for check in checks:
                actual = _value(host, check.attribute, check.keys)
                if (actual is _MISSING
                        or not check.requirement.matches(actual)):
                    rejections.append(check.rejection(actual))
                    break
            else:
                rejections.append(None)
        return rejections

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        checks = spec.memo("ComputeCapabilitiesFilter",
                           lambda: _checks(spec))
        ok = np.ones(len(table), dtype=bool)
        for check in checks:
            # Each distinct value (CPU model, feature list ...) is matched
            # once, however many hosts share it.
            codes, values = table.codes(
                ("capability", check.attribute, check.keys),
                lambda host, check=check: _value(host, check.attribute,
                                                 check.keys))
            verdicts = np.fromiter(
                (value is not _MISSING and check.requirement.matches(value)
                 for value in values), dtype=bool, count=len(values))
            ok &= verdicts[codes]
        return ok
