"""What the ports of Nova's scheduler tests share: Nova's host and request
attributes in the project's terms, runners that check every form of a
plugin, and the names of the documented differences from Nova.

Each module of this package ports the Nova tests of one plugin as a
table; a case is named after the Nova test it ports (the pytest id). A
case whose ``differs`` names a row of the operator guide's "Differences
from Nova" table asserts the project's behaviour instead of Nova's.
"""

import dataclasses
import datetime
import random
from collections.abc import Sequence

import pytest
from oslo_config import cfg

import scheduler.conf
from scheduler.engine import filter_scheduler
from scheduler.filters import BaseHostFilter
from scheduler.hosts.state import HostState
from scheduler.hosts.state import Metric
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec

NOW = datetime.datetime(2024, 5, 1, 12, 0, 0)

#: The rows of the operator guide's "Differences from Nova" table, by the
#: name the cases use (the first cell of the row, in backquotes).
DIFFERENCES = (
    "normalisation",
    "free-includes-ratio",
    "no-aggregates",
    "no-swap",
    "zero-capacity-node",
    "host-attributes",
    "cpu-info-mapping",
    "malformed-extra-spec",
    "capability-operands",
    "json-dialect",
    "forced-hosts-filtered",
    "force-nodes-case",
    "missing-metric",
    "strict-options",
    "one-zone-per-node",
    "group-presence",
)


@dataclasses.dataclass(frozen=True)
class Case:
    """One ported Nova test: ``nova_test`` is its name, ``differs`` the
    documented difference when the project deliberately disagrees."""

    nova_test: str
    expected: object
    host: dict = dataclasses.field(default_factory=dict)
    request: dict = dataclasses.field(default_factory=dict)
    options: dict = dataclasses.field(default_factory=dict)
    differs: str | None = None

    def __post_init__(self):
        assert self.differs is None or self.differs in DIFFERENCES, \
            self.differs


def ids(cases: Sequence[Case]) -> list[str]:
    return [case.nova_test for case in cases]


def make_conf(options: dict | None = None) -> cfg.ConfigOpts:
    """A private ConfigOpts; ``options`` maps ``name`` (group
    filter_scheduler) or ``group.name`` to a value."""
    conf = cfg.ConfigOpts()
    scheduler.conf.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    for key, value in (options or {}).items():
        group, _, name = key.rpartition(".")
        conf.set_override(name, value, group=group or "filter_scheduler")
    return conf


def nova_host(host: str = "host1", node: str = "node1", **nova) -> HostState:
    """A HostState from the attributes Nova's tests give their
    FakeHostState.

    Nova's ``free_ram_mb`` / ``free_disk_mb`` / ``vcpus_used`` are
    physical (no allocation ratio), with ``total_usable_ram_mb``,
    ``total_usable_disk_gb`` and ``vcpus_total`` as the totals; the
    project keeps totals and claims and applies the ratio itself, so the
    claim is total - free. A free amount without a total makes a node of
    exactly that size, nothing claimed. ``metrics`` is a name -> value
    dict, reported now; other keys are HostState fields.
    """
    fields: dict = {"updated_at": NOW, "metrics_updated_at": NOW}
    if "free_ram_mb" in nova or "total_usable_ram_mb" in nova:
        free = nova.pop("free_ram_mb", None)
        total = nova.pop("total_usable_ram_mb", max(free or 0, 0))
        fields["memory_mb"] = total
        fields["memory_mb_claimed"] = total - (total if free is None
                                               else free)
    if "vcpus_total" in nova or "vcpus_used" in nova:
        fields["vcpus"] = nova.pop("vcpus_total", 0)
        fields["vcpus_claimed"] = nova.pop("vcpus_used", 0)
    if "free_disk_mb" in nova or "total_usable_disk_gb" in nova:
        free_gb = nova.pop("free_disk_mb", None)
        free_gb = None if free_gb is None else free_gb / 1024
        total = nova.pop("total_usable_disk_gb", max(free_gb or 0, 0))
        fields["disk_gb"] = total
        fields["disk_gb_claimed"] = total - (total if free_gb is None
                                             else free_gb)
    metrics = nova.pop("metrics", None) or {}
    fields["metrics"] = {name: Metric(float(value), NOW, "nova-peer")
                         for name, value in metrics.items()}
    fields.update(nova)
    return HostState(node_id=abs(hash((host, node))) % 10**6,
                     uuid=f"uuid-{host}-{node}", host=host, nodename=node,
                     **fields)


def nova_request(memory_mb: int = 0, vcpus: int = 0, root_gb: int = 0,
                 ephemeral_gb: int = 0, extra_specs: dict | None = None,
                 hints: dict | None = None, **fields) -> RequestSpec:
    """A RequestSpec from a Nova test's flavor, hints and request fields
    (``availability_zone``, ``ignore_hosts`` ...)."""
    spec = RequestSpec.from_dict({
        "flavor": {"name": "nova-peer", "memory_mb": memory_mb,
                   "vcpus": vcpus, "root_gb": root_gb,
                   "ephemeral_gb": ephemeral_gb,
                   "extra_specs": extra_specs or {}},
        "scheduler_hints": hints or {}, **fields})
    spec.start_call(NOW)
    return spec


def passing(filter_class: type[BaseHostFilter], hosts: Sequence[HostState],
            request: RequestSpec,
            conf: cfg.ConfigOpts | None = None) -> list[bool]:
    """Which of ``hosts`` the filter keeps, asserting that its per-host
    form (``reject``, ``rejections``) and its column form (``passes``,
    when it has one) agree, and that a host it skips passes."""
    plugin = filter_class(conf or make_conf())
    plugin.validate_request(request)
    single = [plugin.reject(host, request) is None for host in hosts]
    assert [r is None for r in plugin.rejections(hosts, request)] == single
    column = plugin.passes(HostTable(list(hosts)), request)
    if column is not None:
        assert column.tolist() == single
    if not plugin.applies(request):
        assert all(single)
    return single


def passes(filter_class: type[BaseHostFilter], host: HostState,
           request: RequestSpec, conf: cfg.ConfigOpts | None = None) -> bool:
    """``passing()`` of one host."""
    return passing(filter_class, [host], request, conf)[0]


def weighed(weighers: Sequence[str], hosts: Sequence[HostState],
            request: RequestSpec | None = None,
            options: dict | None = None) -> list[tuple[str, float]]:
    """(host name, total weight) of every host, best first, as the
    scheduler ranks them with only ``weighers`` (no filters): Nova's
    ``get_weighed_objects`` in the project's terms."""
    # Metrics are reported at NOW, and explain ages them against the
    # clock: no maximum age unless the case sets one.
    conf = make_conf({"enabled_filters": [],
                      "weight_classes": list(weighers),
                      "metrics.max_age": 0, **(options or {})})
    sched = filter_scheduler.FilterScheduler(conf, rng=random.Random(0))
    decision = sched.explain(request or nova_request(), list(hosts))
    return [(result.host.host, result.weight) for result in decision.results
            if result.filtered_by is None]


def nova_fleet() -> list[HostState]:
    """The hosts of Nova's host manager tests: fake_host1..4, each with
    node fake-node, and fake_multihost with nodes fake-node1..4."""
    return ([nova_host(f"fake_host{n}", "fake-node") for n in range(1, 5)]
            + [nova_host("fake_multihost", f"fake-node{n}")
               for n in range(1, 5)])


def names(hosts: Sequence[HostState], kept: Sequence[bool]) -> set[str]:
    """``host/node`` of the hosts ``kept`` marks."""
    return {f"{host.host}/{host.nodename}"
            for host, keep in zip(hosts, kept, strict=True) if keep}


def assert_ends(ranking: list[tuple[str, float]], expected: dict) -> None:
    """Check the best (``top``) and worst (``bottom``) of ``weighed()``:
    (host name or None for any, weight), as Nova's weigher tests do;
    ``candidates``: how many hosts were weighed (not removed)."""
    if "candidates" in expected:
        assert len(ranking) == expected["candidates"], ranking
    for end, index in (("top", 0), ("bottom", -1)):
        if end not in expected:
            continue
        host, weight = expected[end]
        assert ranking[index][1] == pytest.approx(weight), (end, ranking)
        if host is not None:
            assert ranking[index][0] == host, (end, ranking)
