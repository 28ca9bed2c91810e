"""A compute node as the operator reads it: the ``hosts list`` record,
the ``hosts show`` document and the lookup by node or host name, shared
by ``scheduler-manage hosts`` and the API's ``/v1/hosts``.

``down_after`` is ``[filter_scheduler] service_down_time``."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING

from scheduler.common.abridge import short

if TYPE_CHECKING:
    # Annotations only: the host states import NumPy, which the CLI's
    # parser (every command's --format choices) would import with them.
    from scheduler.hosts.state import HostState

#: Keys of a ``hosts list`` record, in column order (JSON and CSV).
HOST_FIELDS = (
    "host", "nodename", "cluster", "availability_zone",
    "vcpus_free", "vcpus_total", "ram_mb_free", "ram_mb_total",
    "disk_gb_free", "disk_gb_total", "pending_claims", "pending_vcpus",
    "pending_ram_mb",
    "instances", "metrics", "metric_age_s", "state", "disabled_reason")


def _age(now: datetime.datetime,
         then: datetime.datetime | None) -> float | None:
    return None if then is None else round((now - then).total_seconds(), 1)


def host_state(host: HostState, now: datetime.datetime,
               down_after: float) -> str:
    """``disabled``, ``down`` (no heartbeat for more than ``down_after``
    seconds, ``[filter_scheduler] service_down_time``) or ``up``."""
    if host.disabled:
        return "disabled"
    if host.updated_at is None or \
            (now - host.updated_at).total_seconds() > down_after:
        return "down"
    return "up"


def host_record(host: HostState, now: datetime.datetime,
                down_after: float) -> dict:
    """One ``hosts list`` row, keyed by ``HOST_FIELDS``."""
    return {
        "host": host.host, "nodename": host.nodename,
        "cluster": host.cluster,
        "availability_zone": host.availability_zone,
        "vcpus_free": host.free_vcpus,
        "vcpus_total": host.vcpus * host.cpu_allocation_ratio,
        "ram_mb_free": host.free_ram_mb,
        "ram_mb_total": host.memory_mb * host.ram_allocation_ratio,
        "disk_gb_free": host.free_disk_gb,
        "disk_gb_total": host.local_disk_limit_gb,
        "pending_claims": host.claims_pending,
        "pending_vcpus": host.vcpus_pending,
        "pending_ram_mb": host.memory_mb_pending,
        "instances": host.num_instances, "metrics": len(host.metrics),
        "metric_age_s": _age(now, host.metrics_updated_at),
        "state": host_state(host, now, down_after),
        "disabled_reason": host.disabled_reason if host.disabled else None,
    }


def _metric_records(host: HostState,
                    now: datetime.datetime) -> list[dict]:
    records = []
    for name, metric in sorted(host.metrics.items()):
        adjusted = host.metric_since(name, None)
        records.append({
            "name": name, "value": metric.value,
            # Only where pending claims move it: one value is clearer.
            "adjusted": None if adjusted == metric.value else adjusted,
            "age_s": _age(now, metric.timestamp),
            "source": metric.source,
        })
    return records


def host_detail(host: HostState, now: datetime.datetime,
                down_after: float) -> dict:
    """The ``hosts show`` document: the ``hosts list`` record plus every
    metric (value, pending-adjusted value where it differs, age,
    source), the malformed ones, cpu_info, networks, instances and
    server groups."""
    return {
        **host_record(host, now, down_after),
        "metrics": _metric_records(host, now),
        "bad_metrics": sorted(host.bad_metrics),
        "cpu_info": host.cpu_info,
        "networks": sorted(host.networks),
        "instances": sorted(host.instances),
        "server_groups": sorted(host.instance_groups),
    }


def find_host(hosts: Sequence[HostState], name: str) -> HostState:
    """The node named ``name``, else the only node of host ``name``;
    raises LookupError with the one-line reason otherwise."""
    by_node = [h for h in hosts if h.nodename == name]
    found = by_node or [h for h in hosts if h.host == name]
    if not found:
        raise LookupError(f"no compute node {short(name)} ({len(hosts)} "
                          "known; "
                          "see hosts list)")
    if len(found) > 1:
        raise LookupError(
            f"host {short(name)} has {len(found)} nodes; name one of "
            f"{', '.join(sorted(h.nodename for h in found))}")
    return found[0]
