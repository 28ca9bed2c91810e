"""Host states: what the scheduler knows about each compute node.

``HostState`` is built from a ``compute_nodes`` row plus the claims
(allocations) on that node. Free resources are capacity x allocation ratio
minus claimed resources. Metrics keep their timestamps; a metric older
than ``[metrics] max_age`` is unavailable. Claims made after the node's
last metrics report are *pending*: they are not in the reported metrics
yet, so the resource-linked metrics are adjusted for them until the next
report arrives.

``HostManager`` keeps the host states of one scheduler process in a cache
that it refreshes from the database before each decision: only the rows
whose ``changed_at`` moved are read again and decoded, and a periodic full
load catches what the incremental reads cannot see (deleted nodes). In a
serving process a background thread does the full loads
(``host_cache_refresher``), off the request path.
"""

import dataclasses
import datetime
import json
import math
import threading
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import orjson
import sqlalchemy as sa
from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

# instance_metrics imports this module back for Metric; it only uses it
# at call time, so the cycle is harmless.
from scheduler import host_cache_refresher
from scheduler import instance_metrics as instance_metrics_mod
from scheduler import observability
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.host_table import HostTable
from scheduler.host_table import epoch
from scheduler.request_spec import RequestSpec

LOG = logging.getLogger(__name__)

MIB = 1024 * 1024

# Metrics that move when an instance lands on the node, and how.
_MEMORY_DOWN = ("memory.free", "memory.available")
_MEMORY_UP = ("memory.used",)


# Slots: a 10,000-host cache holds 200,000 of these.
@dataclasses.dataclass(frozen=True, slots=True)
class Metric:
    value: float
    timestamp: datetime.datetime
    source: str = ""


_new_object = object.__new__
_set_value = Metric.value.__set__  # type: ignore[attr-defined]
_set_timestamp = Metric.timestamp.__set__  # type: ignore[attr-defined]
_set_source = Metric.source.__set__  # type: ignore[attr-defined]


def _metric(value: float, timestamp: datetime.datetime,
            source: str) -> Metric:
    """``Metric(value, timestamp, source)`` at a quarter of the cost: a
    frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``, and every report of every node makes several
    (the slots' own setters are what it ends up calling)."""
    metric = _new_object(Metric)
    _set_value(metric, value)
    _set_timestamp(metric, timestamp)
    _set_source(metric, source)
    return metric


@dataclasses.dataclass
class HostState:
    """One compute node as seen by filters and weighers."""

    node_id: int
    uuid: str
    host: str
    nodename: str
    cluster: str | None = None
    availability_zone: str | None = None
    vcpus: int = 0
    memory_mb: int = 0
    disk_gb: int = 0
    cpu_allocation_ratio: float = 1.0
    ram_allocation_ratio: float = 1.0
    disk_allocation_ratio: float = 1.0
    vcpus_claimed: int = 0
    memory_mb_claimed: int = 0
    disk_gb_claimed: int = 0
    #: Claims newer than the last metrics report (not yet in metrics):
    #: how many, and what they hold.
    claims_pending: int = 0
    vcpus_pending: int = 0
    memory_mb_pending: int = 0
    cpu_info: dict = dataclasses.field(default_factory=dict)
    networks: frozenset[str] = frozenset()
    #: Valid metrics of the last report, by name.
    metrics: dict[str, Metric] = dataclasses.field(default_factory=dict)
    #: Names of reported metrics that were malformed (not numbers).
    bad_metrics: frozenset[str] = frozenset()
    #: Valid instance entries of the last report (DESIGN §11), by instance
    #: uuid and name; read through ``scheduler.instance_metrics``, never
    #: by host filters and weighers.
    instance_metrics: Mapping[str, Mapping[str, Metric]] = \
        dataclasses.field(default_factory=dict)
    disabled: bool = False
    disabled_reason: str | None = None
    updated_at: datetime.datetime | None = None
    metrics_updated_at: datetime.datetime | None = None
    generation: int = 0
    changed_at: datetime.datetime | None = None
    instances: set[str] = dataclasses.field(default_factory=set)
    #: Server groups with at least one instance on this host.
    instance_groups: set[str] = dataclasses.field(default_factory=set)

    @property
    def free_vcpus(self) -> float:
        return self.vcpus * self.cpu_allocation_ratio - self.vcpus_claimed

    @property
    def free_ram_mb(self) -> float:
        return self.memory_mb * self.ram_allocation_ratio - \
            self.memory_mb_claimed

    @property
    def free_disk_gb(self) -> float:
        # local_disk_limit_gb - claimed, without a second property call:
        # filters and weighers read this for every host.
        return self.disk_gb * self.disk_allocation_ratio - \
            self.disk_gb_claimed

    @property
    def local_disk_limit_gb(self) -> float:
        return self.disk_gb * self.disk_allocation_ratio

    @property
    def num_instances(self) -> int:
        return len(self.instances)

    def metric(self, name: str, now: datetime.datetime,
               max_age: float) -> float | None:
        """The metric's value adjusted for pending claims, or None when
        it is missing, malformed or older than ``max_age`` seconds
        (``max_age`` <= 0 disables the age check)."""
        return self.metric_since(name, stale_before(now, max_age))

    def metric_since(self, name: str,
                     cutoff: datetime.datetime | None) -> float | None:
        """``metric()`` with the age check done against a precomputed
        ``cutoff`` (``stale_before(now, max_age)``): None when the metric
        is missing, malformed or reported before ``cutoff``; a cutoff of
        None disables the age check.

        Filters and weighers get the cutoff once per request from
        ``metrics_window()``, which spares them date arithmetic per host
        and metric.
        """
        metric = self.metrics.get(name)
        if metric is None:
            return None
        if cutoff is not None and metric.timestamp < cutoff:
            return None
        # Most hosts have no pending claims: spare them the call.
        if self.memory_mb_pending or self.vcpus_pending:
            return self._with_pending(name, metric.value)
        return metric.value

    def _with_pending(self, name: str, value: float) -> float:
        if not (self.memory_mb_pending or self.vcpus_pending):
            return value
        pending_bytes = self.memory_mb_pending * MIB
        if name in _MEMORY_DOWN:
            return max(value - pending_bytes, 0.0)
        if name in _MEMORY_UP:
            return value + pending_bytes
        if name == "memory.percent":
            total = self.metrics.get("memory.total")
            if total is None or total.value <= 0:
                return value
            return min(value + 100.0 * pending_bytes / total.value, 100.0)
        if name == "cpu.percent" and self.vcpus > 0:
            # A new instance may keep its vCPUs busy; assume it does.
            return min(value + 100.0 * self.vcpus_pending / self.vcpus,
                       100.0)
        return value

    def consume(self, vcpus: int, memory_mb: int, disk_gb: int,
                instance_uuid: str | None = None,
                group: str | None = None) -> None:
        """Account for an instance placed here by this scheduler, before
        the database reflects it (multi-instance requests, local cache)."""
        self.vcpus_claimed += vcpus
        self.memory_mb_claimed += memory_mb
        self.disk_gb_claimed += disk_gb
        self.claims_pending += 1
        self.vcpus_pending += vcpus
        self.memory_mb_pending += memory_mb
        if instance_uuid:
            self.instances.add(instance_uuid)
        if group:
            self.instance_groups.add(group)


def seconds_before(now: datetime.datetime,
                   seconds: float) -> datetime.datetime:
    """``now`` minus ``seconds``, as a cutoff to compare timestamps with:
    ``timestamp < seconds_before(now, limit)`` is ``age > limit``.

    A limit reaching back before year 1 gives the earliest datetime, so
    that nothing is too old, as with the ages it replaces.
    """
    try:
        return now - datetime.timedelta(seconds=seconds)
    except OverflowError:
        return datetime.datetime.min


def stale_before(now: datetime.datetime,
                 max_age: float) -> datetime.datetime | None:
    """The metrics cutoff: reports older than ``max_age`` seconds before
    ``now`` are stale (one exactly ``max_age`` old is not). None when
    ``max_age`` <= 0, which disables the age check."""
    return seconds_before(now, max_age) if max_age > 0 else None


class MetricsWindow(NamedTuple):
    """Which metric reports count as fresh for one request."""

    #: The request's time (``RequestSpec.now``).
    now: datetime.datetime
    #: ``[metrics] max_age`` as read for this request.
    max_age: float
    #: ``stale_before(now, max_age)``, for ``HostState.metric_since()``.
    cutoff: datetime.datetime | None


def metrics_window(spec: RequestSpec, conf: cfg.ConfigOpts) -> MetricsWindow:
    """The metrics freshness of ``spec``: its ``now`` (the clock when the
    scheduler did not set one) and ``[metrics] max_age``, read once per
    request (``spec.memo``) and shared by every filter and weigher that
    reads metrics, so that they all agree on which reports are stale."""
    def window() -> MetricsWindow:
        now = spec.now or models.utcnow()
        max_age = conf.metrics.max_age
        return MetricsWindow(now, max_age, stale_before(now, max_age))
    return spec.memo("metrics_window", window)


def is_number(value) -> bool:
    """True for finite ints and floats (not bools), the valid metric
    values."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def snapshot(hosts: Iterable[HostState]) -> list[HostState]:
    """Private copies of ``hosts`` that ``consume()`` may change.

    ``HostManager.host_states()`` returns the cached objects themselves,
    shared by every thread of the process; a caller placing several
    instances must consume on copies (of the hosts it places on) so that
    neither the cache nor the other requests see its tentative
    placements. The copies are shallow:
    the sets ``consume()`` adds to are copied, the decoded ``metrics`` and
    ``cpu_info`` are shared and must be treated as read-only.
    """
    copies = []
    for host in hosts:
        # A third of copy.copy()'s cost: HostState is a plain dataclass,
        # its state is its __dict__.
        clone = object.__new__(host.__class__)
        clone.__dict__ = {**host.__dict__,
                          "instances": set(host.instances),
                          "instance_groups": set(host.instance_groups)}
        copies.append(clone)
    return copies


@dataclasses.dataclass(frozen=True)
class RefreshStats:
    """What one refresh of the host cache did (benchmarks, logs)."""

    #: True for a load of every row, False for an incremental refresh.
    full: bool
    #: Wall time of the refresh, in seconds.
    duration: float
    #: compute_nodes rows returned by the scan (ids and change keys only,
    #: for an incremental refresh).
    rows_read: int
    #: Rows read with all their columns because they changed (or all of
    #: them, for a full load).
    rows_fetched: int
    #: Rows whose JSON columns were parsed.
    rows_decoded: int
    allocations_read: int
    #: Hosts in the cache afterwards.
    hosts: int


_NODES = models.ComputeNode.__table__
_ALLOCATIONS = models.Allocation.__table__


class _NodeRow(NamedTuple):
    """The columns a HostState is made of; the agent's own usage figures
    and the registration time are not needed to schedule."""

    id: int
    uuid: str
    host: str
    hypervisor_hostname: str
    cluster: str | None
    availability_zone: str | None
    vcpus: int
    memory_mb: int
    local_gb: int
    cpu_allocation_ratio: float | None
    ram_allocation_ratio: float | None
    disk_allocation_ratio: float | None
    cpu_info: str
    networks: str
    metrics: str
    metrics_updated_at: datetime.datetime | None
    disabled: bool
    disabled_reason: str | None
    generation: int
    changed_at: datetime.datetime
    updated_at: datetime.datetime


class _KeyRow(NamedTuple):
    id: int
    changed_at: datetime.datetime
    generation: int


class _AllocationRow(NamedTuple):
    compute_node_id: int
    instance_uuid: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    instance_group: str | None
    created_at: datetime.datetime


def _select(table: sa.Table, shape: type[NamedTuple]) -> sa.Select:
    return sa.select(*(table.c[name] for name in shape._fields))


def _fetch(connection: sa.Connection, query: sa.Select,
           shape: type[NamedTuple], **parameters: object) -> list:
    # Plain tuples: attribute access on SQLAlchemy rows costs several times
    # more, and a full load reads tens of thousands of rows.
    return [shape._make(row)
            for row in connection.execute(query, parameters).all()]


#: Rows a background full load handles between two ``pace()`` calls:
#: ~2 ms of work, below the interpreter's 5 ms switch interval, so that a
#: request waits for the GIL no longer than one slice.
_PACE_ROWS = 100


def _fetch_paced(connection: sa.Connection, query: sa.Select,
                 shape: type[NamedTuple], pace: Callable[[], None]) -> list:
    """``_fetch()`` in slices, calling ``pace()`` after each."""
    rows: list = []
    for part in connection.execute(query).partitions(_PACE_ROWS):
        rows.extend(map(shape._make, part))
        pace()
    return rows


# The statements of an incremental refresh, built once: building one
# costs more than running it on a small result.
_ALL_KEYS = _select(_NODES, _KeyRow)
_KEYS_SINCE = _ALL_KEYS.where(_NODES.c.changed_at >= sa.bindparam("since"))
_NODES_AFTER = _select(_NODES, _NodeRow).where(
    _NODES.c.changed_at > sa.bindparam("after"))
_NODES_BY_ID = _select(_NODES, _NodeRow).where(
    _NODES.c.id.in_(sa.bindparam("ids", expanding=True)))
_ALLOCATIONS_BY_NODE = _select(_ALLOCATIONS, _AllocationRow).where(
    _ALLOCATIONS.c.compute_node_id.in_(sa.bindparam("ids", expanding=True)))
_WINDOW_PROBE = sa.select(
    sa.func.count(),
    sa.func.coalesce(sa.func.sum(_NODES.c.generation), 0)).where(
    _NODES.c.changed_at >= sa.bindparam("since"),
    _NODES.c.changed_at <= sa.bindparam("until"))


# Ids per IN list: far below the bound-parameter limit of every backend
# (SQLite before 3.32 allowed 999), and one statement in the usual case.
_IN_CHUNK = 500


# Tuples, not dataclasses: one of each is made per changed row.
class _Decoded(NamedTuple):
    """The JSON columns of one row as text and as decoded values."""

    text: tuple[str, str, str]
    metrics: dict[str, Metric]
    bad_metrics: frozenset[str]
    instance_metrics: Mapping[str, Mapping[str, Metric]]
    cpu_info: dict
    networks: frozenset[str]
    #: What was wrong with ``cpu_info`` and ``networks``.
    column_problems: tuple[str, ...] = ()


class _Entry(NamedTuple):
    state: HostState
    decoded: _Decoded
    #: What the state was built from, to tell on a full load whether
    #: anything changed.
    source: tuple


@dataclasses.dataclass
class _Changes:
    """A refresh's result, applied to the cache only once every query
    succeeded."""

    full: bool
    entries: dict[int, _Entry]
    gone: set[int]
    newest: datetime.datetime | None
    rows_read: int
    rows_fetched: int
    rows_decoded: int
    allocations_read: int


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _parse_timestamp(value: object) -> datetime.datetime | None:
    """Naive UTC from ISO-8601 text (``Z`` or an offset allowed)."""
    if not isinstance(value, str):
        return None
    try:
        if value.endswith(("Z", "z")):
            # What the agent writes; skips the time zone conversion.
            parsed = datetime.datetime.fromisoformat(value[:-1])
            return None if parsed.tzinfo is not None else parsed
        parsed = datetime.datetime.fromisoformat(value)
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(datetime.UTC).replace(tzinfo=None)
    except (ValueError, OverflowError):
        return None
    return parsed


_MISSING = object()


def _load_json(text: str, column: str, problems: list[str]) -> object:
    try:
        # orjson parses a report in a third of the standard library's
        # time; what it refuses (NaN literals, integers past 64 bits) the
        # standard library reads as before, so that only the bad values
        # are lost, not the row.
        return orjson.loads(text)
    except (TypeError, ValueError, orjson.JSONDecodeError):
        pass
    try:
        # Looked up at call time, so that tests can count the calls.
        return json.loads(text)
    except (TypeError, ValueError, RecursionError) as e:
        problems.append(f"{column} is not JSON ({_short(text)}: {e})")
        return None


def reading(entry: dict, stamps: dict[str, datetime.datetime]
            ) -> tuple[float, datetime.datetime, str] | str:
    """``(value, timestamp, source)`` of one metrics entry, or what is
    wrong with it. ``stamps`` caches parsed timestamps: the entries of
    one report mostly share a handful."""
    value = entry.get("value", _MISSING)
    stamp = entry.get("timestamp", _MISSING)
    if value is _MISSING or stamp is _MISSING:
        missing = [k for k in ("value", "timestamp") if k not in entry]
        return f"missing key(s) {', '.join(missing)}"
    # The common case first: a float or an int (not a bool) from JSON.
    kind = type(value)
    if not ((kind is float or kind is int) and math.isfinite(value)
            or is_number(value)):
        return f"value {_short(value)} is not a finite number"
    timestamp = stamps.get(stamp) if type(stamp) is str else None
    if timestamp is None:
        timestamp = _parse_timestamp(stamp)
        if timestamp is None:
            return (f"timestamp {_short(stamp)} is not an ISO-8601 date "
                    "and time")
        stamps[stamp] = timestamp
    source = entry.get("source")
    return value, timestamp, (source if type(source) is str
                              else "" if source is None else str(source))


#: Parsed metric timestamps, shared by the reports decoded one after
#: another: the entries of a report share a handful, and nodes reporting
#: together often share theirs. Emptied when it grows past _STAMPS_KEPT.
_STAMPS: dict[str, datetime.datetime] = {}
_STAMPS_KEPT = 4096


def _recent_stamps() -> dict[str, datetime.datetime]:
    if len(_STAMPS) > _STAMPS_KEPT:
        _STAMPS.clear()
    return _STAMPS


def _decode_metrics(text: str, problems: list[str],
                    instance_entries: list[dict] | None = None
                    ) -> tuple[dict[str, Metric], frozenset[str]]:
    entries = _load_json(text, "metrics", problems)
    if entries is None:
        return {}, frozenset()
    if not isinstance(entries, list):
        problems.append(f"metrics hold a {type(entries).__name__}, not a "
                        "list")
        return {}, frozenset()
    metrics: dict[str, Metric] = {}
    bad: set[str] = set()
    stamps = _recent_stamps()
    # Every node's report is decoded at every change (one a minute per
    # node): the common entry, a well-formed one, takes the inlined path
    # below; anything else goes through reading() to be worded.
    for index, entry in enumerate(entries):
        if type(entry) is not dict:
            problems.append(f"metric entry #{index} {_short(entry)} is not "
                            "an object")
            continue
        if "instance" in entry:
            # One instance's measurement (instance.*), not the host's:
            # host filters and weighers never see it.
            if instance_entries is not None:
                instance_entries.append(entry)
            continue
        name = entry.get("name")
        if type(name) is not str or not name:
            problems.append(f"metric entry #{index} has no name")
            continue
        if name in metrics or name in bad:
            problems.append(f"metric {name} is reported twice; the first "
                            "entry is used")
            continue
        value = entry.get("value")
        stamp = entry.get("timestamp")
        timestamp = stamps.get(stamp) if type(stamp) is str else None
        source = entry.get("source")
        kind = type(value)
        if (timestamp is not None and (kind is float or kind is int)
                and math.isfinite(value) and type(source) is str):
            metrics[name] = _metric(value, timestamp, source)
            continue
        found = reading(entry, stamps)
        if type(found) is str:
            bad.add(name)
            problems.append(f"metric {name}: {found}")
            continue
        metrics[name] = Metric(*found)
    return metrics, frozenset(bad)


def _decode_cpu_info(text: str, problems: list[str]) -> dict:
    info = _load_json(text, "cpu_info", problems)
    if info is None:
        return {}
    if not isinstance(info, dict):
        problems.append(f"cpu_info holds a {type(info).__name__}, not an "
                        "object")
        return {}
    return info


def _decode_networks(text: str, problems: list[str]) -> frozenset[str]:
    networks = _load_json(text, "networks", problems)
    if networks is None:
        return frozenset()
    if not isinstance(networks, list):
        problems.append(f"networks hold a {type(networks).__name__}, not a "
                        "list")
        return frozenset()
    names = [n for n in networks if isinstance(n, str)]
    if len(names) != len(networks):
        problems.append("networks hold entries that are not names: "
                        + _short([n for n in networks
                                  if not isinstance(n, str)]))
    return frozenset(names)


def _decode(row: _NodeRow, previous: _Decoded | None = None) -> _Decoded:
    """Decode the JSON columns; what is malformed is left out and logged.

    Only rows that changed are decoded, so the warning appears once per
    change of a bad row rather than once per scheduling request.
    ``previous``: the row's last decoding, whose ``cpu_info`` and
    ``networks`` are kept when their text did not change.
    """
    problems: list[str] = []
    instance_entries: list[dict] = []
    metrics, bad_metrics = _decode_metrics(row.metrics, problems,
                                           instance_entries)
    if previous is not None and previous.text[1:] == (row.cpu_info,
                                                       row.networks):
        # Reports change the metrics only: the node's description is
        # decoded once per change of its own.
        cpu_info, networks = previous.cpu_info, previous.networks
        column_problems = previous.column_problems
    else:
        found: list[str] = []
        cpu_info = _decode_cpu_info(row.cpu_info, found)
        networks = _decode_networks(row.networks, found)
        column_problems = tuple(found)
    problems.extend(column_problems)
    decoded = _Decoded(
        text=(row.metrics, row.cpu_info, row.networks),
        metrics=metrics, bad_metrics=bad_metrics,
        instance_metrics=instance_metrics_mod.OnFirstUse(
            instance_entries, row.hypervisor_hostname),
        cpu_info=cpu_info, networks=networks,
        column_problems=column_problems)
    if problems:
        LOG.warning("Compute node %s (host %s, id %s) reports malformed "
                    "data; it is scheduled on for what remains: %s",
                    row.hypervisor_hostname, row.host, row.id,
                    "; ".join(problems))
    return decoded


def _build(row: _NodeRow, allocations: Sequence[_AllocationRow],
           decoded: _Decoded,
           ratios: tuple[float, float, float]) -> HostState:
    vcpus = memory_mb = disk_gb = 0
    claims_pending = vcpus_pending = memory_mb_pending = 0
    instances: set[str] = set()
    groups: set[str] = set()
    reported = row.metrics_updated_at
    for allocation in allocations:
        vcpus += allocation.vcpus
        memory_mb += allocation.memory_mb
        disk_gb += allocation.disk_gb
        # A node that never reported has no claim in its metrics yet,
        # nor has a report stamped the very instant the claim was made.
        if reported is None or allocation.created_at >= reported:
            claims_pending += 1
            vcpus_pending += allocation.vcpus
            memory_mb_pending += allocation.memory_mb
        instances.add(allocation.instance_uuid)
        if allocation.instance_group:
            groups.add(allocation.instance_group)
    cpu_ratio, ram_ratio, disk_ratio = ratios
    # Every field, as HostState() would set them, at a third of the cost
    # of its keyword __init__: one state is built per changed row.
    state = _new_object(HostState)
    state.__dict__ = {
        "node_id": row.id, "uuid": row.uuid, "host": row.host,
        "nodename": row.hypervisor_hostname, "cluster": row.cluster,
        "availability_zone": row.availability_zone, "vcpus": row.vcpus,
        "memory_mb": row.memory_mb, "disk_gb": row.local_gb,
        "cpu_allocation_ratio": _ratio(row.cpu_allocation_ratio,
                                       cpu_ratio),
        "ram_allocation_ratio": _ratio(row.ram_allocation_ratio,
                                       ram_ratio),
        "disk_allocation_ratio": _ratio(row.disk_allocation_ratio,
                                        disk_ratio),
        "vcpus_claimed": vcpus, "memory_mb_claimed": memory_mb,
        "disk_gb_claimed": disk_gb, "claims_pending": claims_pending,
        "vcpus_pending": vcpus_pending,
        "memory_mb_pending": memory_mb_pending,
        "cpu_info": decoded.cpu_info, "networks": decoded.networks,
        "metrics": decoded.metrics, "bad_metrics": decoded.bad_metrics,
        "instance_metrics": decoded.instance_metrics,
        "disabled": bool(row.disabled),
        "disabled_reason": row.disabled_reason,
        "updated_at": row.updated_at, "metrics_updated_at": reported,
        "generation": row.generation, "changed_at": row.changed_at,
        "instances": instances, "instance_groups": groups}
    return state


def _ratio(own: float | None, default: float) -> float:
    return default if own is None else own


def _by_node(allocations: Iterable[_AllocationRow]
             ) -> dict[int, list[_AllocationRow]]:
    grouped: dict[int, list[_AllocationRow]] = {}
    for allocation in allocations:
        grouped.setdefault(allocation.compute_node_id, []).append(allocation)
    return grouped


def _chunks(ids: Sequence[int]) -> Iterator[Sequence[int]]:
    for start in range(0, len(ids), _IN_CHUNK):
        yield ids[start:start + _IN_CHUNK]


#: Seconds between two checks of the overlap window for late changes.
_WINDOW_CHECK_INTERVAL = 1.0


def _order_key(state: HostState) -> tuple[str, str, int]:
    return state.host, state.nodename, state.node_id


class HostManager:
    """The host states of this process, refreshed incrementally.

    ``host_states()`` refreshes the cache, then returns it. The first call
    and every ``[filter_scheduler] full_refresh_interval`` seconds load
    every row, which is also how deleted nodes leave the cache. In between
    a refresh scans the ids and change keys ``(changed_at, generation)``
    of the rows changed since ``refresh_overlap`` seconds before the
    newest change seen (the watermark), then reads in full, with their
    claims, only the rows whose key differs from the cached one. Every
    writer of a row sets ``changed_at``, so a claim or a metrics report is
    seen by the next refresh.

    Thread-safe: refreshes are serialised, and a caller that waited for
    another thread's refresh which started after its own call uses that
    refresh's result. Cached HostState objects are replaced, never changed,
    by a refresh; they are shared between threads, so callers must not
    change them: see ``snapshot()``.

    ``clock`` (monotonic seconds) decides when a full load is due; tests
    inject a fake one.

    A serving process calls ``start_background_refresh()``: a daemon
    thread (``host_cache_refresher``) then does the first load and the
    periodic full loads, reading outside the lock and swapping the result
    in (``reload()``), so that no request waits for one; requests only
    refresh incrementally. A request that arrives before the first load
    completed waits for it, as it would have done the load itself; when
    no table could be loaded yet, it loads on its own, failing as above.
    Deleted nodes leave the cache with the next background load. Without
    the thread (commands, tests, simulations) the cache behaves as
    described above.
    """

    def __init__(self, conf: cfg.ConfigOpts,
                 clock: Callable[[], float] = time.monotonic):
        self.conf = conf
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[int, _Entry] = {}
        self._ordered: list[HostState] = []
        self._position: dict[int, int] = {}
        self._table = HostTable([])
        self._watermark: datetime.datetime | None = None
        self._last_full: float | None = None
        self._window_checked: float | None = None
        self._started = 0
        self._completed = 0
        self._refresher: host_cache_refresher.Refresher | None = None
        #: Ids of the nodes the cache took in while a background full load
        #: read the table (None when none does): see ``_swap_in()``.
        self._touched: set[int] | None = None
        #: Counters of the last successful refresh, None before the first.
        self.last_refresh: RefreshStats | None = None
        #: Called with the refresh's connection after each read (the live
        #: policies' generation check), so that they cost no connection
        #: of their own.
        self.refresh_hooks: list[Callable[[sa.Connection], None]] = []

    def start_background_refresh(self) -> None:
        """Leave full loads, the first included, to a daemon thread of
        this process (``host_cache_refresher``); requests then only read
        what changed. Call it in the process that serves (after a fork:
        threads do not survive one); ``close()`` stops the thread."""
        if not (self._refresher and self._refresher.alive):
            self._refresher = host_cache_refresher.Refresher(self)
            self._refresher.start()

    def close(self) -> None:
        """Stop the background refresher, if any; the cache stays usable
        and does its full loads on the request path again."""
        if self._refresher is not None:
            self._refresher.stop()
            self._refresher = None

    def host_table(self, now: float | None = None) -> HostTable:
        """``host_states()`` as a HostTable, whose columns carry over from
        one refresh to the next (recomputed for the hosts that changed).
        Shared by every thread; treat it as read-only."""
        self.host_states(now)
        return self._table

    def host_states(self, now: float | None = None) -> list[HostState]:
        """Refresh the cache and return every host, ordered by host and
        nodename.

        ``now`` is a reading of the manager's clock (default: read it).
        Returns the shared cached objects; copy them with ``snapshot()``
        before calling ``consume()``. A database error propagates as
        raised (SQLAlchemyError) and leaves the cache as it was; the next
        call tries again.
        """
        ticket = self._started
        with self._lock:
            if self._completed > ticket:
                return list(self._ordered)
            self._started += 1
            started = self._started
            self._refresh(self._clock() if now is None else now)
            self._completed = started
            return list(self._ordered)

    def claims_on(self, node_ids: Iterable[int]
                  ) -> dict[int, tuple[_AllocationRow, ...]]:
        """The claims on these nodes as the cache last read them, by node
        id (nodes it does not hold are absent): each with its
        ``instance_uuid``, ``vcpus``, ``memory_mb``, ``disk_gb`` and
        ``instance_group``. Call ``host_states()`` first for fresh ones."""
        with self._lock:
            entries = self._entries
            return {node_id: entries[node_id].source[1]
                    for node_id in node_ids if node_id in entries}

    def record_claim(self, node_id: int, generation: int,
                     changed_at: datetime.datetime, instance_uuid: str,
                     vcpus: int, memory_mb: int, disk_gb: int,
                     group: str | None) -> bool:
        """Take a claim this process just made into the cache, as the next
        refresh would read it; True when done.

        Done only when the claim is the node's one change since the cache
        read it (the claim moved its generation from the cached one to
        ``generation``) and the cache does not count it yet (a refresh
        may have read the node before the claim and its claims after);
        otherwise the next refresh reads the node as usual. The refresh
        then still reads the node's row, stamped after its watermark, but
        finds the change key as cached: it reads no claims, decodes
        nothing and rebuilds nothing.
        """
        with self._lock:
            entry = self._entries.get(node_id)
            if (entry is None or entry.state.generation != generation - 1
                    or instance_uuid in entry.state.instances):
                return False
            row, allocations, ratios = entry.source
            row = row._replace(generation=generation, changed_at=changed_at)
            allocations = (*allocations, _AllocationRow(
                node_id, instance_uuid, vcpus, memory_mb, disk_gb, group,
                changed_at))
            entry = _Entry(_build(row, allocations, entry.decoded, ratios),
                           entry.decoded, (row, allocations, ratios))
            # As a refresh that read only this node would; the watermark
            # stays, so that the next refresh reads what changed since.
            self._apply(_Changes(
                full=False, entries={node_id: entry}, gone=set(),
                newest=None, rows_read=0, rows_fetched=0, rows_decoded=0,
                allocations_read=0))
            return True

    def _refresh(self, now: float) -> None:
        opts = self.conf.filter_scheduler
        # With a background refresher running, full loads after the first
        # are its job: a request only reads what changed.
        full = self._last_full is None or (
            not (self._refresher and self._refresher.alive)
            and now - self._last_full >= opts.full_refresh_interval)
        began = time.perf_counter()
        changes = self._read(full, now, hooks=True)
        self._apply(changes)
        if full:
            # A full load reads the overlap window too.
            self._last_full = self._window_checked = now
        self._refreshed(changes, began)

    def _refreshed(self, changes: _Changes, began: float) -> None:
        self.last_refresh = RefreshStats(
            full=changes.full, duration=time.perf_counter() - began,
            rows_read=changes.rows_read, rows_fetched=changes.rows_fetched,
            rows_decoded=changes.rows_decoded,
            allocations_read=changes.allocations_read,
            hosts=len(self._ordered))
        observability.metrics().refreshed(
            changes.full, self.last_refresh.duration, changes.rows_fetched)

    def _read(self, full: bool, now: float, hooks: bool,
              pace: Callable[[], None] | None = None) -> _Changes:
        """One refresh's reads, not yet applied; ``hooks``: run the
        refresh hooks on its connection; ``pace``: see ``reload()``."""
        opts = self.conf.filter_scheduler
        ratios = (opts.cpu_allocation_ratio, opts.ram_allocation_ratio,
                  opts.disk_allocation_ratio)
        # No pre-ping round trip on every request: a pooled connection
        # the database dropped fails the first statement instead, and the
        # refresh runs once more on a fresh one.
        engine = db_api.get_engine(self.conf, pre_ping=False)
        for attempt in (1, 2):
            try:
                # The nodes are read before their claims, in snapshots of
                # their own but on MariaDB: a claim committed in between is
                # counted under the node's older key, which the next
                # refresh finds moved.
                with engine.connect() as connection:
                    if engine.dialect.name == "postgresql":
                        # psycopg would send BEGIN before the first read
                        # and the pool a ROLLBACK after the last: two
                        # round trips of the three of a typical refresh.
                        connection = connection.execution_options(
                            isolation_level="AUTOCOMMIT")
                    if full:
                        changes = self._read_all(connection, ratios, pace)
                    else:
                        changes = self._read_changed(
                            connection, now, opts.refresh_overlap, ratios)
                    for hook in self.refresh_hooks if hooks else ():
                        hook(connection)
                return changes
            except sa_exc.DBAPIError as e:
                if not e.connection_invalidated or attempt == 2:
                    raise
                LOG.info("Database connection lost; refreshing the host "
                         "cache on a new one: %s", db_api.one_line(e))
        raise AssertionError("unreachable")

    def _read_all(self, connection: sa.Connection,
                  ratios: tuple[float, float, float],
                  pace: Callable[[], None] | None = None) -> _Changes:
        if pace is None:
            rows = _fetch(connection, _select(_NODES, _NodeRow), _NodeRow)
            allocations = _fetch(connection,
                                 _select(_ALLOCATIONS, _AllocationRow),
                                 _AllocationRow)
        else:
            rows = _fetch_paced(connection, _select(_NODES, _NodeRow),
                                _NodeRow, pace)
            allocations = _fetch_paced(
                connection, _select(_ALLOCATIONS, _AllocationRow),
                _AllocationRow, pace)
        entries, decoded = self._build_entries(rows, allocations, ratios,
                                               reuse=True, pace=pace)
        return _Changes(
            full=True, entries=entries, gone=set(),
            newest=max((row.changed_at for row in rows), default=None),
            rows_read=len(rows), rows_fetched=len(rows),
            rows_decoded=decoded, allocations_read=len(allocations))

    def _read_changed(self, connection: sa.Connection, now: float,
                      overlap: int,
                      ratios: tuple[float, float, float]) -> _Changes:
        watermark = self._watermark
        if watermark is None:
            newer: list[_NodeRow] = []
            keys = _fetch(connection, _ALL_KEYS, _KeyRow)
        else:
            # Rows stamped after the watermark are read whole at once:
            # they are few, and they changed. One stamped with the
            # watermark's own time is a late change, for _late_keys().
            newer = _fetch(connection, _NODES_AFTER, _NodeRow,
                           after=watermark)
            keys = [_KeyRow(row.id, row.changed_at, row.generation)
                    for row in newer]
            keys.extend(self._late_keys(connection, now, overlap,
                                        {row.id for row in newer}))
        stale = [key.id for key in keys if self._is_stale(key)]
        wanted = set(stale)
        rows = [row for row in newer if row.id in wanted]
        # Only rows that changed are read with their (large) JSON columns.
        unread = sorted(wanted - {row.id for row in rows})
        allocations: list[_AllocationRow] = []
        for chunk in _chunks(unread):
            rows.extend(_fetch(connection, _NODES_BY_ID, _NodeRow,
                               ids=list(chunk)))
        kept_claims = self._claims_as_cached(rows)
        claimed = [node_id for node_id in stale
                   if node_id not in kept_claims]
        for chunk in _chunks(claimed):
            allocations.extend(_fetch(connection, _ALLOCATIONS_BY_NODE,
                                      _AllocationRow, ids=list(chunk)))
        entries, decoded = self._build_entries(rows, allocations, ratios,
                                               reuse=False,
                                               kept_claims=kept_claims)
        newest = max((key.changed_at for key in keys), default=None)
        if rows:
            newest = max(newest, max(row.changed_at for row in rows))
        return _Changes(
            full=False, entries=entries,
            # Seen by the scan, gone when read: deleted in between.
            gone=wanted - entries.keys(), newest=newest,
            rows_read=len(keys), rows_fetched=len(rows),
            rows_decoded=decoded, allocations_read=len(allocations))

    def _late_keys(self, connection: sa.Connection, now: float,
                   overlap: int, seen: set[int]) -> list[_KeyRow]:
        """The change keys of the overlap window up to the watermark
        (changes committed late, or by a writer whose clock lags), but
        only when that window's row count or generation sum differs from
        the cache's, and at most once per ``_WINDOW_CHECK_INTERVAL``
        seconds. ``seen``: the rows already read, stamped after the
        watermark.

        Every writer bumps ``generation``, so a late change moves the
        sum. Comparing two numbers spares a scan of every row of the
        window, which at a monitor interval of a minute holds a sixth of
        the fleet for the default overlap; checking once a second spares
        the sum over the window on every request. A late change is seen
        within the second, and a claim is checked against the database
        anyway.
        """
        if (self._window_checked is not None
                and now - self._window_checked < _WINDOW_CHECK_INTERVAL):
            return []
        self._window_checked = now
        watermark = self._watermark
        since = watermark - datetime.timedelta(seconds=overlap)
        count, generations = connection.execute(
            _WINDOW_PROBE, {"since": since, "until": watermark}).one()
        if (count, generations) == self._window_fingerprint(
                since, watermark, seen):
            return []
        return [key for key in _fetch(connection, _KEYS_SINCE, _KeyRow,
                                      since=since)
                if key.id not in seen]

    def _window_fingerprint(self, since: datetime.datetime,
                            until: datetime.datetime,
                            moved: set[int]) -> tuple[int, int]:
        """(rows, sum of generations) the database should hold from
        ``since`` to ``until`` (both included) if nothing was committed late:
        the cached hosts changed then, but for those whose change since
        was seen (``moved``: their ids)."""
        table = self._table
        changed = table.column("changed_at", float,
                               lambda host: epoch(host.changed_at))
        inside = (changed >= epoch(since)) & (changed <= epoch(until))
        generations = table.attribute("generation", np.int64)
        count, total = int(inside.sum()), int(generations[inside].sum())
        for node_id in moved:
            row = self._position.get(node_id)
            if row is not None and inside[row]:
                count -= 1
                total -= int(generations[row])
        return count, total

    def _claims_as_cached(self, rows: Iterable[_NodeRow]
                          ) -> dict[int, tuple[_AllocationRow, ...]]:
        """The cached claims of the ``rows`` whose one change since the
        cache read them was a metrics report, by node id.

        Every writer of a node bumps its generation by one, and only a
        report moves ``metrics_updated_at`` (to the ``changed_at`` it
        writes); claims and releases leave it. A row one generation on,
        with a new report stamped at its change time, was therefore
        changed by that report alone, and its claims are still those
        cached: most changes are reports (one per node and monitor
        interval), and a node's claims are most of what its refresh
        reads.
        """
        kept = {}
        for row in rows:
            entry = self._entries.get(row.id)
            if entry is None:
                continue
            cached = entry.state
            reported = row.metrics_updated_at
            if (row.generation == cached.generation + 1
                    and reported is not None
                    and reported == row.changed_at
                    and reported != cached.metrics_updated_at):
                kept[row.id] = entry.source[1]
        return kept

    def _is_stale(self, key: _KeyRow) -> bool:
        entry = self._entries.get(key.id)
        return (entry is None or entry.state.changed_at != key.changed_at
                or entry.state.generation != key.generation)

    def _build_entries(self, rows: Sequence[_NodeRow],
                       allocations: Sequence[_AllocationRow],
                       ratios: tuple[float, float, float], reuse: bool,
                       pace: Callable[[], None] | None = None,
                       kept_claims: Mapping[int, Sequence[_AllocationRow]]
                       | None = None
                       ) -> tuple[dict[int, _Entry], int]:
        by_node: dict[int, Sequence[_AllocationRow]] = {
            **_by_node(allocations), **(kept_claims or {})}
        entries = {}
        decoded_rows = 0
        for index, row in enumerate(rows):
            if pace is not None and index % _PACE_ROWS == _PACE_ROWS - 1:
                pace()
            claims = by_node.get(row.id, ())
            source = (row, tuple(claims), ratios)
            old = self._entries.get(row.id) if reuse else None
            if old is not None and old.source == source:
                # Unchanged: the same object, so that the host table
                # keeps its columns.
                entries[row.id] = old
                continue
            decoded = self._reusable(old, row)
            if decoded is None:
                previous = self._entries.get(row.id)
                decoded = _decode(row, previous and previous.decoded)
                decoded_rows += 1
            entries[row.id] = _Entry(
                _build(row, claims, decoded, ratios), decoded, source)
        return entries, decoded_rows

    @staticmethod
    def _reusable(entry: _Entry | None, row: _NodeRow) -> _Decoded | None:
        """The cached decoding of a row whose JSON columns did not
        change, on a full load.

        The text is compared, not the change key: a full load is the
        safety net for a writer that changed a row without moving its
        key.
        """
        if entry is None or entry.decoded.text != (row.metrics, row.cpu_info,
                                                   row.networks):
            return None
        return entry.decoded

    def reload(self, pace: Callable[[], None] | None = None) -> None:
        """Load every row without holding up requests, then swap the
        result in, keeping what requests took in meanwhile (the
        background refresher's full load). ``pace()`` is called between
        slices of the work. Errors propagate; the cache stays as it was."""
        now, began = self._clock(), time.perf_counter()
        with self._lock:
            self._touched, known = set(), set(self._entries)
        try:
            changes = self._read(True, now, hooks=False, pace=pace)
            # Outside the lock, so that the swap holds it for the changed
            # rows only: what differs from the cache the read began with
            # (what requests changed since is in _touched).
            diff = {node_id: entry for node_id, entry
                    in changes.entries.items()
                    if self._entries.get(node_id) is not entry}
            gone = known - changes.entries.keys()
        except BaseException:
            with self._lock:
                self._touched = None
            raise
        with self._lock:
            touched, self._touched = self._touched or set(), None
            for node_id in touched:
                current = self._entries.get(node_id)
                diff.pop(node_id, None)
                # Taken in during the read: possibly newer than the load,
                # never older than the state the watermark vouches for.
                # Cached before the read yet missing from it: deleted.
                if current is not None and (node_id in changes.entries
                                            or node_id not in known):
                    gone.discard(node_id)
                else:
                    gone.add(node_id)
            newest = changes.newest
            if touched and self._watermark is not None:
                # A kept entry may predate changes the load saw: the
                # watermark stays, so that the next refresh reads them.
                newest = None
            else:
                self._window_checked = now
            self._apply(dataclasses.replace(
                changes, full=False, entries=diff, gone=gone, newest=newest))
            self._last_full = now
            self._refreshed(changes, began)

    def _apply(self, changes: _Changes) -> None:
        if self._touched is not None:
            self._touched.update(changes.entries.keys(), changes.gone)
        # A full load's entries are the whole table: what is not in them
        # is gone.
        gone = (self._entries.keys() - changes.entries.keys()
                if changes.full else changes.gone)
        reorder = False
        replaced: dict[int, HostState] = {}
        for node_id, entry in changes.entries.items():
            old = self._entries.get(node_id)
            if old is entry:
                continue
            self._entries[node_id] = entry
            if old is None or (_order_key(old.state)
                               != _order_key(entry.state)):
                reorder = True
            elif not reorder:
                replaced[self._position[node_id]] = entry.state
        for node_id in gone:
            if self._entries.pop(node_id, None) is not None:
                reorder = True
        if reorder:
            self._ordered = sorted((entry.state for entry
                                    in self._entries.values()),
                                   key=_order_key)
            self._position = {state.node_id: index for index, state
                              in enumerate(self._ordered)}
            self._table = HostTable(list(self._ordered))
        elif replaced:
            for index, state in replaced.items():
                self._ordered[index] = state
            self._table = self._table.replaced(replaced)
        self._advance_watermark(changes.newest)

    def _advance_watermark(self, newest: datetime.datetime | None) -> None:
        if newest is None:
            return
        if self._watermark is not None:
            newest = max(newest, self._watermark)
        # A writer whose clock runs ahead must not push the watermark past
        # the changes of the others: never beyond our own clock. Rows
        # stamped in the future are then scanned again, not decoded again.
        self._watermark = min(newest, models.utcnow())
