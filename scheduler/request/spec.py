"""The request being scheduled, as filters and weighers see it.

``RequestSpec.from_dict`` takes the JSON-safe ``request_spec`` of the RPC
API (docs/architecture.md). Schema validation of the wire format happens at the
RPC boundary; this module turns the dict into attributes and parses the
``resources:`` extra specs once per request.

A request also carries what one scheduling call derives from it, in one
``CycleState`` that each call starts afresh: ``FilterScheduler`` fixes
``now`` once per call, and filters and weighers
``memo()`` what they work out from the request and the configuration
(the metrics freshness cutoff, a compiled query...), once per request
rather than per host, and shared between them. Filter and weigher objects
serve many requests at once and keep no per-request state themselves.
"""

import collections.abc
import dataclasses
import datetime
import typing

from scheduler.request import extra_specs

_T = typing.TypeVar("_T")


@dataclasses.dataclass
class Flavor:
    name: str = ""
    vcpus: int = 0
    memory_mb: int = 0
    root_gb: int = 0
    ephemeral_gb: int = 0
    extra_specs: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def disk_gb(self) -> int:
        return self.root_gb + self.ephemeral_gb


@dataclasses.dataclass
class CycleState:
    """One decision's own state, as kube-scheduler's CycleState: what a
    select/explain call derives from the request, replaced as one by the
    next call (``RequestSpec.start_call``), so that one spec serves every
    decision round of a request."""

    #: The instant the request is scheduled at (naive UTC), fixed once
    #: per call so that every filter and weigher ages heartbeats and
    #: metrics against the same time; None outside such a call (filters
    #: then read the clock).
    now: datetime.datetime | None = None
    #: Hosts already holding members of ``scheduler_hints.group``; filled
    #: by the scheduler before filtering, as no filter sees all hosts.
    group_hosts: set[str] = dataclasses.field(default_factory=set)
    #: What ``RequestSpec.memo()`` computed, by key.
    memo: dict[str, typing.Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class RequestSpec:
    flavor: Flavor
    num_instances: int = 1
    availability_zone: str | None = None
    cluster: str | None = None
    scheduler_hints: dict = dataclasses.field(default_factory=dict)
    ignore_hosts: list[str] = dataclasses.field(default_factory=list)
    force_hosts: list[str] = dataclasses.field(default_factory=list)
    force_nodes: list[str] = dataclasses.field(default_factory=list)
    requested_networks: list[str] = dataclasses.field(default_factory=list)
    image_properties: dict = dataclasses.field(default_factory=dict)
    instance_uuids: list[str] = dataclasses.field(default_factory=list)
    #: Parsed ``resources:`` extra specs (thresholds and max/min goals).
    resources: list[extra_specs.ResourceSpec] = dataclasses.field(
        default_factory=list)
    #: What the current select/explain call derived (``start_call``).
    state: CycleState = dataclasses.field(
        default_factory=CycleState, init=False, repr=False, compare=False)

    @classmethod
    def from_dict(cls, spec: dict, scope: str = "resources",
                  instance_uuids: list[str] | None = None) -> "RequestSpec":
        """Build from the RPC dict; raises InvalidExtraSpec on a bad
        ``<scope>:`` extra spec."""
        flavor_dict = dict(spec.get("flavor") or {})
        flavor = Flavor(
            name=str(flavor_dict.get("name", "")),
            vcpus=int(flavor_dict.get("vcpus", 0)),
            memory_mb=int(flavor_dict.get("memory_mb", 0)),
            root_gb=int(flavor_dict.get("root_gb", 0)),
            ephemeral_gb=int(flavor_dict.get("ephemeral_gb", 0)),
            extra_specs={str(k): str(v) for k, v in
                         (flavor_dict.get("extra_specs") or {}).items()},
        )
        return cls(
            flavor=flavor,
            num_instances=int(spec.get("num_instances", 1)),
            availability_zone=spec.get("availability_zone"),
            cluster=spec.get("cluster"),
            scheduler_hints=dict(spec.get("scheduler_hints") or {}),
            ignore_hosts=list(spec.get("ignore_hosts") or []),
            force_hosts=list(spec.get("force_hosts") or []),
            force_nodes=list(spec.get("force_nodes") or []),
            requested_networks=list(spec.get("requested_networks") or []),
            image_properties=dict(
                (spec.get("image") or {}).get("properties") or {}),
            instance_uuids=list(instance_uuids or []),
            resources=extra_specs.parse_resource_specs(
                flavor.extra_specs, scope),
        )

    @property
    def group(self) -> str | None:
        group = self.scheduler_hints.get("group")
        return str(group) if group else None

    @property
    def group_policy(self) -> str | None:
        return self.scheduler_hints.get("group_policy")

    def hint_list(self, name: str) -> list[str]:
        """A scheduler hint that may be given as one value or a list."""
        value = self.scheduler_hints.get(name)
        if value is None:
            return []
        return [str(v) for v in value] if isinstance(
            value, list | tuple) else [str(value)]

    @property
    def now(self) -> datetime.datetime | None:
        """``now`` of the current call (``CycleState``)."""
        return self.state.now

    @property
    def group_hosts(self) -> set[str]:
        """``group_hosts`` of the current call (``CycleState``)."""
        return self.state.group_hosts

    @group_hosts.setter
    def group_hosts(self, hosts: set[str]) -> None:
        self.state.group_hosts = hosts

    def start_call(self, now: datetime.datetime) -> None:
        """Begin one select/explain call at ``now``: a new ``CycleState``,
        so nothing memoised or recorded by an earlier call (the
        configuration may have been reloaded since, the hosts chosen then
        not claimed) is seen by it."""
        self.state = CycleState(now)

    def memo(self, key: str, factory: collections.abc.Callable[[], _T]
             ) -> _T:
        """``factory()``, computed on the first call with ``key`` and
        returned again until ``start_call()``.

        For filters and weighers: what they derive from the request and
        the configuration (option values, a freshness cutoff, a compiled
        query) is then computed once per request instead of once per
        host. Keys are plugin-specific strings; ``factory`` may depend on
        the request, ``now`` and the configuration, never on hosts or on
        ``group_hosts`` (which changes between the instances of one
        request).
        """
        try:
            return self.state.memo[key]
        except KeyError:
            value = self.state.memo[key] = factory()
            return value
