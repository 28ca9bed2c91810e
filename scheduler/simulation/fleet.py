"""Simulated compute nodes in the ``compute_nodes`` table.

Each node reports as a compute monitor would: every report interval (each
node at its own phase of it, as agents started at different times do) it
writes its metrics list, its heartbeat and a generation bump into its
row. The metrics come from the instances it hosts: ``cpu.percent`` is
their demand (vCPUs x utilisation) over the node's cores, capped at 100;
``memory.*`` counts each instance's whole memory as used; each instance
also gets an ``instance.cpu.percent`` entry (percent of its own vCPUs).
"""

import csv
import dataclasses
import datetime
import json
import uuid
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Sequence

import numpy as np
import sqlalchemy as sa

from scheduler import exception
from scheduler.common import clock
from scheduler.db import models
from scheduler.db.tables import NODES

MIB = 2 ** 20
#: Memory the hypervisor keeps for itself, in MiB.
HOST_RESERVED_MB = 4096
NAME_PREFIX = "sim-"
#: Stands for the report's time in a node's metrics text: most reports
#: repeat the node's previous values, and a replace of this mark costs a
#: fraction of building the JSON text again.
_STAMP = "\x00stamp\x00"


DEFAULT_DISK_GB = 100000


@dataclasses.dataclass(frozen=True)
class NodeKind:
    """``count`` nodes alike (a row of a ``--fleet`` file)."""

    count: int
    vcpus: int
    memory_mb: int
    disk_gb: int = DEFAULT_DISK_GB
    cluster: str | None = None
    availability_zone: str = "nova"


@dataclasses.dataclass(frozen=True)
class FleetSpec:
    """The simulated nodes: ``hosts`` alike (``--hosts``,
    ``--host-vcpus``, ``--host-memory-mb``), or, when ``kinds`` is given
    (``--fleet``), those kinds in order (``from_kinds``)."""

    hosts: int
    vcpus: int
    memory_mb: int
    disk_gb: int = DEFAULT_DISK_GB
    #: Nodes are dealt round-robin into this many clusters; with one,
    #: they belong to no cluster.
    clusters: int = 1
    kinds: tuple[NodeKind, ...] = ()

    @classmethod
    def from_kinds(cls, kinds: Sequence[NodeKind]) -> "FleetSpec":
        return cls(sum(kind.count for kind in kinds), kinds[0].vcpus,
                   kinds[0].memory_mb, kinds[0].disk_gb, kinds=tuple(kinds))

    def node(self, index: int) -> NodeKind:
        """The kind of node ``index`` (its ``count`` is meaningless)."""
        for kind in self.kinds:
            if index < kind.count:
                return kind
            index -= kind.count
        return NodeKind(1, self.vcpus, self.memory_mb, self.disk_gb,
                        self.cluster(index))

    def node_vcpus(self) -> np.ndarray:
        """The vCPUs of every node, node order."""
        if not self.kinds:
            return np.full(self.hosts, float(self.vcpus))
        return np.repeat([float(kind.vcpus) for kind in self.kinds],
                         [kind.count for kind in self.kinds])

    def cluster(self, index: int) -> str | None:
        """The cluster of node ``index``."""
        if self.kinds:
            return self.node(index).cluster
        if self.clusters <= 1:
            return None
        return f"{NAME_PREFIX}c{index % self.clusters}"


#: At most this many report phases per interval: nodes of one phase
#: report in one transaction.
MAX_PHASES = 12


def report_phases(hosts: int) -> list[np.ndarray]:
    """The node indexes of each report phase of a fleet of ``hosts``:
    node ``i`` reports in phase ``i % phases``."""
    phases = min(MAX_PHASES, hosts)
    return [np.arange(phase, hosts, phases) for phase in range(phases)]


def host_name(index: int) -> str:
    return f"{NAME_PREFIX}{index:05d}"


def node_uuid(index: int) -> str:
    """The uuid of node ``index``."""
    return str(uuid.UUID(int=(1 << 64) + index))


def instance_uuid(vm: int) -> str:
    """The instance uuid of the workload's VM number ``vm``: stable, so
    that runs on one workload name their instances alike."""
    return str(uuid.UUID(int=vm + 1))


class SimulatedFleet:
    """The nodes' rows: created by ``create()``, reported by
    ``report()``."""

    def __init__(self, engine: sa.Engine, spec: FleetSpec):
        self.engine = engine
        self.spec = spec
        #: Database id of node ``i``, and the reverse.
        self.node_ids: list[int] = []
        self.index_of: dict[int, int] = {}
        self._instance_prefixes: dict[str, str] = {}
        #: Node index -> (version, its metrics text and its instance
        #: entries' (None: none) split where the report's time goes:
        #: joined with the time, several times faster than a replace).
        self._templates: dict[int, tuple[Hashable, list[str],
                                         list[str] | None]] = {}

    def create(self) -> None:
        """Insert the nodes, idle, as reported now."""
        now = clock.utcnow()
        spec = self.spec
        kinds = [spec.node(i) for i in range(spec.hosts)]
        self._memory_mb = [kind.memory_mb for kind in kinds]
        rows = [{
            "uuid": node_uuid(i), "host": host_name(i),
            "hypervisor_hostname": host_name(i), "cluster": kind.cluster,
            "availability_zone": kind.availability_zone,
            "vcpus": kind.vcpus, "memory_mb": kind.memory_mb,
            "local_gb": kind.disk_gb,
            "memory_mb_used": HOST_RESERVED_MB, "local_gb_used": 0,
            "cpu_info": json.dumps({"arch": "x86_64"}), "networks": "[]",
            "metrics": self._metrics(now.isoformat() + "Z", 0.0,
                                     HOST_RESERVED_MB, i),
            "metrics_updated_at": now, "updated_at": now, "changed_at": now,
            "created_at": now, "disabled": False, "generation": 0,
        } for i, kind in enumerate(kinds)]
        # Stored phase by phase: the rows one phase of reports rewrites
        # then share the database's pages, and a phase's commit writes
        # a page for every few nodes rather than one for each (SQLite
        # keeps rows in insertion order). What is stored is the same.
        stored = [rows[i] for phase in report_phases(spec.hosts)
                  for i in phase.tolist()]
        with self.engine.begin() as connection:
            connection.execute(NODES.insert(), stored)
            found = dict(connection.execute(sa.select(
                NODES.c.host, NODES.c.id).where(
                    NODES.c.host.like(NAME_PREFIX + "%"))).all())
        self.node_ids = [found[host_name(i)] for i in range(spec.hosts)]
        self.index_of = {node: i for i, node in enumerate(self.node_ids)}

    def report(self, hosts: np.ndarray, cpu_percent: np.ndarray,
               memory_mb_used: np.ndarray, versions: Sequence[Hashable],
               instances: Callable[[int], list[tuple[str, float]]]
               ) -> None:
        """Write the reports of ``hosts`` (node indexes) in one
        transaction: their cpu.percent, memory in use (MiB) and, from
        ``instances(host)``, (instance uuid, instance cpu percent) pairs.

        ``versions[i]`` names the state of ``hosts[i]``: a report whose
        host is at the version of its previous one has the same values,
        and only its timestamps are written anew (``instances`` is not
        asked).
        """
        now = clock.utcnow()
        stamp = now.isoformat() + "Z"
        templates = self._templates
        with self.engine.begin() as connection:
            stored = self._stored_time(connection, now)
            rows = []
            for host, cpu, memory, version in zip(
                    hosts.tolist(), cpu_percent.tolist(),
                    memory_mb_used.tolist(), versions, strict=True):
                template = templates.get(host)
                if template is None or template[0] != version:
                    held = instances(host)
                    template = templates[host] = (
                        version,
                        self._metrics(_STAMP, cpu, memory,
                                      host).split(_STAMP),
                        self._instance_metrics(_STAMP, held).split(
                            _STAMP) if held else None)
                rows.append((stamp.join(template[1]),
                             template[2] and stamp.join(template[2]),
                             stored, stored, stored, memory,
                             self.node_ids[host]))
            # The driver's own executemany: a report of every node every
            # interval is most of a simulation's writes, and SQLAlchemy's
            # per-row parameter handling would double their cost.
            connection.exec_driver_sql(self._report_sql(connection), rows)

    def _report_sql(self, connection: sa.Connection) -> str:
        mark = "?" if connection.dialect.paramstyle == "qmark" else "%s"
        return (f"UPDATE compute_nodes SET metrics = {mark}, "
                f"instance_metrics = {mark}, "
                f"metrics_updated_at = {mark}, updated_at = {mark}, "
                f"changed_at = {mark}, memory_mb_used = {mark}, "
                f"generation = generation + 1 WHERE id = {mark}")

    @staticmethod
    def _stored_time(connection: sa.Connection, now: datetime.datetime):
        """``now`` as the dialect stores a PreciseDateTime (SQLite keeps
        text, compared as text: it must be formatted as SQLAlchemy
        does)."""
        dialect = connection.dialect
        process = NODES.c.changed_at.type.dialect_impl(
            dialect).bind_processor(dialect)
        return now if process is None else process(now)

    def _metrics(self, stamp: str, cpu: float, memory_mb_used: int,
                 host: int) -> str:
        # Built as text from pieces made once: this runs for every node at
        # every report, and json.dumps of dicts costs several times more.
        total = self._memory_mb[host] * MIB
        used = min(memory_mb_used * MIB, total)
        free = total - used
        tail = f', "source": "simulator", "timestamp": "{stamp}"}}'
        return (
            f'[{{"name": "cpu.percent", "value": {cpu!r}{tail}, '
            f'{{"name": "memory.total", "value": {total}{tail}, '
            f'{{"name": "memory.used", "value": {used}{tail}, '
            f'{{"name": "memory.free", "value": {free}{tail}, '
            f'{{"name": "memory.available", "value": {free}{tail}, '
            f'{{"name": "memory.percent", "value": '
            f'{100.0 * used / total!r}{tail}]')

    def _instance_metrics(self, stamp: str,
                          instances: list[tuple[str, float]]) -> str:
        """The instance entries, in the column of their own the agent
        writes them to."""
        tail = f', "timestamp": "{stamp}"}}'
        prefixes = self._instance_prefixes
        return "[" + ", ".join(
            f"{prefixes.get(instance) or self._prefix(instance)}"
            f"{value:.2f}{tail}" for instance, value in instances) + "]"

    def _prefix(self, instance: str) -> str:
        prefix = self._instance_prefixes[instance] = (
            f'{{"name": "instance.cpu.percent", "instance": "{instance}", '
            '"value": ')
        return prefix


def clear(engine: sa.Engine) -> None:
    """Empty a database of an earlier simulation; raises
    ``exception.InvalidRequest`` when it holds real compute nodes."""
    tables = models.Base.metadata.tables
    with engine.begin() as connection:
        if not sa.inspect(connection).has_table("compute_nodes"):
            return
        real = connection.execute(sa.select(sa.func.count()).where(
            ~NODES.c.host.like(NAME_PREFIX + "%"))).scalar()
        if real:
            raise exception.InvalidRequest(
                f"the database holds {real} compute node(s) that the "
                "simulator did not create; simulate on an empty database")
        for name in ("migrations", "utilization_samples", "allocations",
                     "compute_nodes"):
            connection.execute(tables[name].delete())


class FleetError(Exception):
    """A ``--fleet`` file that cannot be used (one line: what and
    where)."""


#: Columns of a ``--fleet`` file: required, then optional.
FLEET_REQUIRED = ("count", "vcpus", "memory_mb")
FLEET_OPTIONAL = ("disk_gb", "cluster", "availability_zone")


def _positive_int(text: str, column: str, where: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise FleetError(f"{where}: {column} {text.strip()!r} is not a "
                         "whole number") from None
    if value < 1:
        raise FleetError(f"{where}: {column} {value} must be at least 1")
    return value


def _kind(row: dict[str, str], where: str) -> NodeKind:
    if any(row.get(column) is None for column in FLEET_REQUIRED):
        raise FleetError(f"{where}: expected the columns "
                         f"{', '.join(FLEET_REQUIRED)}")
    numbers = {column: _positive_int(row[column], column, where)
               for column in FLEET_REQUIRED}
    if (row.get("disk_gb") or "").strip():
        numbers["disk_gb"] = _positive_int(row["disk_gb"], "disk_gb", where)
    return NodeKind(**numbers, cluster=(row.get("cluster") or "").strip()
                    or None, availability_zone=(
                        row.get("availability_zone") or "").strip() or "nova")


def read_fleet(path: str) -> FleetSpec:
    """The nodes of a ``--fleet`` CSV file: a header naming ``count``,
    ``vcpus``, ``memory_mb`` and optionally ``disk_gb``, ``cluster``,
    ``availability_zone``, then one row per kind of node. Raises
    FleetError (one line) for a file that cannot be read, an unknown or
    missing column, or a value that is not a positive whole number."""
    try:
        with open(path, newline="", encoding="utf-8",
                  errors="replace") as stream:
            rows = csv.DictReader(stream)
            header = [name.strip() for name in rows.fieldnames or ()]
            rows.fieldnames = header
            unknown = set(header) - set(FLEET_REQUIRED + FLEET_OPTIONAL)
            missing = set(FLEET_REQUIRED) - set(header)
            if unknown or missing:
                raise FleetError(
                    f"fleet {path}: header must name "
                    f"{', '.join(FLEET_REQUIRED)} and optionally "
                    f"{', '.join(FLEET_OPTIONAL)} (unknown: "
                    f"{', '.join(sorted(unknown)) or '-'}; missing: "
                    f"{', '.join(sorted(missing)) or '-'})")
            kinds = [_kind(row, f"fleet {path}:{rows.line_num}")
                     for row in rows if any((v or "").strip()
                                            for v in row.values()
                                            if isinstance(v, str))]
    except (OSError, csv.Error, UnicodeError) as e:
        raise FleetError(f"cannot read fleet {path}: {e}") from e
    if not kinds:
        raise FleetError(f"fleet {path} names no node")
    return FleetSpec.from_kinds(kinds)
