"""Which changes of a host can move a host-table column's values, so that
a new table version recomputes a column only for the hosts whose change
could move it (``HostTable.replaced``).

Two kinds of change leave most of a host as it was:

- ``REPORT``: a metrics report was the node's one change since the cache
  read it (``scheduler.hosts.cache.build.reported_state``): its metrics,
  histories, report and heartbeat times, generation and change time, and
  which claims are pending, change; its capacities, claims and names do
  not;
- ``CLAIM``: a claim this process made, taken into the cache
  (``HostManager.record_claim``): the claims' sums and sets, pending
  claims, generation and change time change; the row and its report do
  not.

Every other change (a row written by anything else, a release, a full
load) recomputes every column. A column declares the kinds that can move
it (``HostTable.column(..., changed_by=...)``); one that declares nothing
is recomputed for every change, as a third-party plugin's columns are.
"""

from collections.abc import Mapping

REPORT = "report"
CLAIM = "claim"

#: Moved by neither kind: the node's row as its operator or agent wrote
#: it, and what is computed from it alone.
ROW: frozenset[str] = frozenset()
CLAIMS = frozenset((CLAIM,))
REPORTS = frozenset((REPORT,))
#: Moved by both kinds; a column declaring nothing is taken for one.
ANY = frozenset((REPORT, CLAIM))

#: The kinds that can move each ``HostState`` attribute (fields and
#: properties; ``tests/unit/hosts/test_change_kinds.py`` checks that
#: every one of them is here, ``tests/unit/hosts/cache/
#: test_change_kinds_of_builders.py`` that the cache's builders move no
#: other).
ATTRIBUTES: Mapping[str, frozenset[str]] = {
    **dict.fromkeys(
        ("node_id", "uuid", "host", "nodename", "cluster",
         "availability_zone", "vcpus", "memory_mb", "disk_gb",
         "cpu_allocation_ratio", "ram_allocation_ratio",
         "disk_allocation_ratio", "cpu_info", "networks", "disabled",
         "disabled_reason", "local_disk_limit_gb"), ROW),
    **dict.fromkeys(
        ("vcpus_claimed", "memory_mb_claimed", "disk_gb_claimed",
         "instances", "instance_groups", "instance_flavors", "free_vcpus",
         "free_ram_mb", "free_disk_gb", "num_instances"), CLAIMS),
    **dict.fromkeys(
        ("metrics", "bad_metrics", "instance_metrics", "metric_history",
         "instance_history", "updated_at", "metrics_updated_at",
         "pending_cpu_fraction"), REPORTS),
    **dict.fromkeys(
        ("generation", "changed_at", "claims_pending", "vcpus_pending",
         "memory_mb_pending"), ANY),
}


def of_attribute(name: str | None) -> frozenset[str]:
    """The kinds that can move HostState attribute ``name`` (all of them
    for a name not known here: a subclass's own, a Nova name, None)."""
    return ATTRIBUTES.get(name, ANY)
