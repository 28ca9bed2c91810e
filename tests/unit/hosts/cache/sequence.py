"""A seeded sequence of what changes nodes (reports, claims, releases,
claims taken in, late changes, new and deleted nodes, full loads) driven
through a HostManager, and what it holds after each step, as plain values
to compare: the host states field by field and the host table's columns.
"""

import dataclasses
import datetime
import json
import random
from collections.abc import Iterator

import sqlalchemy as sa

from scheduler.hosts import table as table_mod
from scheduler.hosts.cache.manager import HostManager
from tests.unit.hosts.cache.fakes import ALLOCATIONS
from tests.unit.hosts.cache.fakes import NODES
from tests.unit.hosts.cache.fakes import SECOND
from tests.unit.hosts.cache.fakes import add_node
from tests.unit.hosts.cache.fakes import claim
from tests.unit.hosts.cache.fakes import iso
from tests.unit.hosts.cache.fakes import update_node

START = datetime.datetime(2026, 1, 1)
_NAMES = ("cpu.percent", "memory.used", "memory.free")
#: The table's columns a decision builds, patched by every refresh (each
#: as the filters and weighers declare it: only for the kinds of change
#: that can move it).
COLUMNS = (("attribute", "generation"), ("attribute", "vcpus_pending"),
           ("attribute", "free_vcpus"), ("attribute", "vcpus"),
           ("attribute", "num_instances"), ("attribute", "disabled"),
           ("metric", "cpu.percent"), ("metric_epoch", "cpu.percent"))


@dataclasses.dataclass
class Claimed:
    """A claim as ``HostManager.record_claim`` reads it."""

    node_id: int
    generation: int | None
    changed_at: datetime.datetime | None
    instance_uuid: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    group: str | None


def _report_text(rng: random.Random, when: datetime.datetime) -> str:
    # Each metric stamped on its own at times (plugins report apart),
    # and a few instance entries.
    entries = [{"name": name, "value": rng.choice([rng.randint(0, 99),
                                                   rng.random() * 100]),
                "timestamp": iso(when - rng.randint(0, 2) * SECOND),
                "source": "seq"} for name in _NAMES]
    entries += [{"name": "instance.cpu.percent", "value": rng.random(),
                 "timestamp": iso(when), "source": "seq",
                 "instance": f"i-{number}"}
                for number in range(rng.randint(0, 2))]
    return json.dumps(entries)


class Sequence:
    """``steps`` seeded changes of a few nodes, each followed by a
    refresh of ``manager``; ``clock``: the manager's."""

    def __init__(self, engine: sa.Engine, manager: HostManager, clock,
                 seed: int):
        self.engine, self.manager, self.clock = engine, manager, clock
        self.rng = random.Random(seed)
        self.when = START
        self.nodes = [self._new_node() for _ in range(6)]

    def _new_node(self) -> int:
        return add_node(self.engine, f"h{self.rng.randrange(10 ** 6):06d}",
                        when=self._tick())

    def _tick(self) -> datetime.datetime:
        self.when += SECOND * self.rng.choice([1, 1, 2])
        return self.when

    def step(self) -> None:
        rng = self.rng
        node = rng.choice(self.nodes)
        action = rng.choice(["report"] * 6 + [
            "claim", "release", "record", "late", "disable", "add",
            "delete", "full"])
        getattr(self, f"_{action}")(node)
        self.manager.host_states()

    def _report(self, node: int) -> None:
        # Often several nodes at one stamp, as a refresh reads them.
        when = self._tick()
        for chosen in {node, *self.rng.sample(self.nodes, 2)}:
            update_node(self.engine, chosen,
                        metrics=_report_text(self.rng, when),
                        metrics_updated_at=when, updated_at=when,
                        changed_at=when, generation=NODES.c.generation + 1)

    def _claim(self, node: int) -> None:
        claim(self.engine, node, vcpus=self.rng.randint(1, 4),
              group=self.rng.choice([None, "g"]), when=self._tick())

    def _release(self, node: int) -> None:
        with self.engine.begin() as connection:
            found = connection.execute(
                sa.select(ALLOCATIONS.c.id).where(
                    ALLOCATIONS.c.compute_node_id == node)).first()
            if found is not None:
                connection.execute(ALLOCATIONS.delete().where(
                    ALLOCATIONS.c.id == found[0]))
            connection.execute(NODES.update().where(NODES.c.id == node).values(
                generation=NODES.c.generation + 1, changed_at=self._tick()))

    def _record(self, node: int) -> None:
        when = self._tick()
        instance = claim(self.engine, node, vcpus=2, when=when)
        with self.engine.connect() as connection:
            generation = connection.execute(sa.select(
                NODES.c.generation).where(NODES.c.id == node)).scalar()
        self.manager.record_claim(Claimed(node, generation, when, instance,
                                          2, 512, 10, None))

    def _late(self, node: int) -> None:
        # Committed late: stamped inside the overlap window.
        update_node(self.engine, node, vcpus=self.rng.randint(4, 16),
                    changed_at=self.when - 2 * SECOND,
                    generation=NODES.c.generation + 1)
        self.clock.now += 2

    def _disable(self, node: int) -> None:
        update_node(self.engine, node, disabled=self.rng.random() < 0.5,
                    cpu_info=json.dumps({"arch": self.rng.choice(
                        ["x86_64", "aarch64"])}),
                    changed_at=self._tick(),
                    generation=NODES.c.generation + 1)

    def _full(self, _node: int) -> None:
        if self.rng.random() < 0.5:
            self.clock.now += 10 ** 6  # the next refresh loads every row
        else:
            self.manager.reload()

    def _delete(self, node: int) -> None:
        if len(self.nodes) > 3:
            self.nodes.remove(node)
            with self.engine.begin() as connection:
                connection.execute(ALLOCATIONS.delete().where(
                    ALLOCATIONS.c.compute_node_id == node))
                connection.execute(NODES.delete().where(NODES.c.id == node))
            self._tick()

    def _add(self, _node: int) -> None:
        self.nodes.append(self._new_node())


def state_values(state) -> dict:
    """Every field of a host state as plain values (histories by their
    public methods)."""
    values = {}
    for name, value in vars(state).items():
        if name in ("metric_history", "instance_history"):
            value = {metric: (value.reports(metric), [
                         series.tolist() for series in value.series(metric)])
                     for metric in value.names()}
        elif name == "instance_metrics":
            value = {instance: dict(metrics)
                     for instance, metrics in value.items()}
        elif name == "metrics":
            value = dict(value)
        values[name] = value
    return values


def columns(manager: HostManager) -> Iterator[tuple]:
    """The table's columns (``COLUMNS``), built on first use and patched
    by refreshes since, beside the same columns built from its hosts."""
    with manager.leased_table() as table:
        fresh = table_mod.HostTable(list(table.hosts))
        for built in (table, fresh):
            # The metric's columns as filters build them (a cutoff that
            # every report passes builds its times too).
            table_mod.fresh_metric(built, "cpu.percent", START)
        for key in COLUMNS:
            kind, name = key
            if kind == "attribute":
                yield key, table.attribute(name), fresh.attribute(name)
                continue
            value = (table_mod.metric_value(name) if kind == "metric"
                     else table_mod.metric_epoch(name))
            yield (key, table.column(key, float, value),
                   fresh.column(key, float, value))
