"""ComputeCapabilitiesFilter: host attributes must meet the flavor's
``capabilities:`` extra specs."""

import collections.abc
import dataclasses
import difflib
from typing import NamedTuple

import numpy as np

from scheduler.filters import BaseHostFilter
from scheduler.filters import Rejection
from scheduler.filters.nova_names import NOVA_NAMES
from scheduler.hosts import change_kinds
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import by_code
from scheduler.request import capability_specs
from scheduler.request.spec import RequestSpec

# Data attributes only: a flavor must not reach methods or internals.
# Metrics and their histories are left to the resources scope, which
# knows about staleness, windows and pending claims.
_ATTRIBUTES = frozenset(
    {field.name for field in dataclasses.fields(HostState)}
    | {name for name, value in vars(HostState).items()
       if isinstance(value, property)}) - {
    "metrics", "bad_metrics", "metric_history", "instance_history"}

# What Nova holds as integers and this project computes as floats (the
# allocation ratio is in them): 0.0 must read "0", as in Nova, for "s=="
# and plain equality.
_INTEGRAL = frozenset({"free_ram_mb", "free_vcpus", "free_disk_gb",
                       "local_disk_limit_gb", "free_disk_mb",
                       "disk_mb_used"})

_MISSING = object()


def lookup(host: HostState, path: tuple[str, ...]) -> object:
    """The value at ``path`` (attribute, then keys of nested dicts), or
    ``_MISSING``; an attribute set to None counts as missing."""
    return _value(host, _attribute(path), path[1:])


def _attribute(path: tuple[str, ...]) -> str | None:
    """The HostState data attribute, or Nova's name of one (NOVA_NAMES),
    ``path`` starts with, or None."""
    name = path[0]
    return name if name in _ATTRIBUTES or name in NOVA_NAMES else None


def _value(host: HostState, attribute: str | None,
           keys: tuple[str, ...]) -> object:
    """``lookup()`` with the path's attribute already resolved."""
    if attribute is None:
        return _MISSING
    nova_name = NOVA_NAMES.get(attribute)
    value = (getattr(host, attribute, None) if nova_name is None
             else nova_name(host))
    if (attribute in _INTEGRAL and isinstance(value, float)
            and value.is_integer()):
        value = int(value)
    for key in keys:
        # dict first: the Mapping ABC check costs ten times more.
        if (not isinstance(value, (dict, collections.abc.Mapping))
                or key not in value):
            return _MISSING
        value = value[key]
    return _MISSING if value is None else value


class _Check(NamedTuple):
    """One capabilities extra spec, resolved and parsed for a request."""

    cap: capability_specs.CapabilitySpec
    attribute: str | None
    keys: tuple[str, ...]
    requirement: capability_specs.Requirement

    def accepts(self, actual: object) -> bool:
        """Whether a host whose value is ``actual`` meets this check."""
        return actual is not _MISSING and self.requirement.matches(actual)

    def rejection(self, actual: object) -> Rejection:
        """Why a host whose value is ``actual`` fails this check."""
        cap = self.cap
        if actual is _MISSING:
            return Rejection(str(cap), f"host has no {cap.attribute}")
        return Rejection(str(cap), f"host has {cap.attribute}={actual!r}")


def _specs(spec: RequestSpec) -> tuple[
        list[capability_specs.CapabilitySpec],
        list[capability_specs.CapabilitySpec]]:
    """(the capability specs the filter checks, the unscoped keys it
    ignores because they name no host attribute)."""
    used, ignored = [], []
    for cap in capability_specs.capability_specs(spec.flavor.extra_specs):
        if cap.scoped or _attribute(cap.path) is not None:
            used.append(cap)
        else:
            ignored.append(cap)
    return used, ignored


def _ignored_warning(cap: capability_specs.CapabilitySpec) -> str:
    close = difflib.get_close_matches(cap.key, sorted(_ATTRIBUTES | set(
        NOVA_NAMES)), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return (f"extra spec {cap.key}={cap.requirement!r} ignored: without a "
            "scope it counts only when it names a host attribute, as in "
            f"Nova{hint}")


def _checks(spec: RequestSpec) -> list[_Check]:
    used, _ignored = _specs(spec)
    capability_specs.check_capability_specs(used)
    return [_Check(cap, _attribute(cap.path), cap.path[1:],
                   capability_specs.parse_requirement(cap.requirement))
            for cap in used]


class ComputeCapabilitiesFilter(BaseHostFilter):
    """Rejects hosts whose attributes do not meet the flavor's
    ``capabilities:`` extra specs (and, as in Nova, its keys without a
    scope that name a host attribute, and ``hw:maxphysaddr_bits``).

    ``capabilities:vcpus``, ``capabilities:cluster`` ... name HostState
    attributes (``hypervisor_hostname`` is the nodename); further ``:``
    parts walk into dicts: ``capabilities:cpu_info:topology:cores``. Values
    use Nova's operators (``s== x86_64``, ``>= 8``, ``<in> avx2`` ...,
    see ``scheduler.request.capability_specs``). A host without the
    attribute is rejected. Nova's HostState names (``free_disk_mb``,
    ``vcpus_total`` ..., ``nova_names.NOVA_NAMES``, shared with JsonFilter)
    read the same values. A key without a scope that names no host
    attribute (``XXYY=1``) is ignored, as Nova does, with a warning in
    explain output; keys of other scopes are ignored.
    """

    def applies(self, spec: RequestSpec) -> bool:
        return bool(spec.memo("ComputeCapabilitiesFilter.specs",
                              lambda: _specs(spec))[0])

    def validate_request(self, spec: RequestSpec) -> None:
        used, _ignored = _specs(spec)
        capability_specs.check_capability_specs(used)

    def warnings(self, spec: RequestSpec) -> list[str]:
        _used, ignored = _specs(spec)
        return [_ignored_warning(cap) for cap in ignored]

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
                                                 check.keys),
                change_kinds.of_attribute(check.attribute))
            verdicts = np.fromiter((check.accepts(value) for value in values),
                                   dtype=bool, count=len(values))
            if not verdicts.all():  # (each distinct value passes, usually)
                ok &= by_code(codes, verdicts)
        return ok

    def why_rejected(self, host: HostState,
                     spec: RequestSpec) -> Rejection | None:
        checks = spec.memo("ComputeCapabilitiesFilter",
                           lambda: _checks(spec))
        # The first check the host fails, as passes() tests them.
        for check in checks:
            actual = _value(host, check.attribute, check.keys)
            if not check.accepts(actual):
                return check.rejection(actual)
        return None
