"""The planner reads instance entries from the nodes' reports
(docs/operator-guide.md): the balancer's choice and the planned
migration's load figure."""

import dataclasses
import json
import uuid

import pytest

from scheduler.balancer import base
from scheduler.db import models
from scheduler.placement import migrations as migrations_mod
from tests.unit.placement import test_balance_planner
from tests.unit.placement.fakes import ALLOCATIONS
from tests.unit.placement.fakes import HOST_VCPUS
from tests.unit.placement.fakes import NODES
from tests.unit.placement.fakes import Fleet
from tests.unit.placement.fakes import planner

#: The planner tests' configuration fixture.
conf = test_balance_planner.conf


@dataclasses.dataclass
class MeasuredFleet(Fleet):
    """A Fleet whose nodes also report each instance's own CPU use."""

    #: False: the nodes report cpu.percent only (no instance entries).
    measured: bool = True
    memory_mb: dict[str, int] = dataclasses.field(default_factory=dict)

    def add_instance(self, host: str, name: str, vcpus: int,
                     memory_mb: int, own_percent: float) -> None:
        """``name`` on ``host``, keeping ``own_percent`` of its vCPUs
        busy."""
        self.placement[name] = (host, vcpus,
                                own_percent * vcpus / HOST_VCPUS)
        with self.engine.begin() as connection:
            connection.execute(ALLOCATIONS.insert().values(
                uuid=str(uuid.uuid4()), instance_uuid=name,
                compute_node_id=self.nodes[host], vcpus=vcpus,
                memory_mb=memory_mb, disk_gb=10,
                created_at=models.utcnow()))

    def report(self) -> None:
        super().report()
        if not self.measured:
            return
        stamp = self.now().isoformat(timespec="microseconds") + "Z"
        for host, node_id in self.nodes.items():
            entries = [{"name": "cpu.percent", "value": self.cpu(host),
                        "timestamp": stamp, "source": "sim"}]
            entries += [{"name": "instance.cpu.percent",
                         "value": load * HOST_VCPUS / vcpus,
                         "instance": name, "timestamp": stamp,
                         "source": "sim"}
                        for name, (where, vcpus, load)
                        in self.placement.items() if where == host]
            with self.engine.begin() as connection:
                connection.execute(NODES.update().where(
                    NODES.c.id == node_id).values(
                        metrics=json.dumps(entries),
                        changed_at=models.utcnow(),
                        generation=NODES.c.generation + 1))


def busy_host_fleet(engine, measured: bool) -> MeasuredFleet:
    """h0 at 87.25% (5% of its own plus its instances), h1 idle at 5%."""
    fleet = MeasuredFleet(engine, ticks=3, measured=measured)
    fleet.add_host("h0", 0)
    fleet.add_host("h1", 0)
    fleet.add_instance("h0", "busy-small", 3, 4096, 100.0)   # 18.75%
    fleet.add_instance("h0", "idle-big", 8, 2048, 2.0)       # 1%
    fleet.add_instance("h0", "steady-1", 5, 16384, 100.0)    # 31.25%
    fleet.add_instance("h0", "steady-2", 5, 16384, 100.0)    # 31.25%
    return fleet


@pytest.mark.parametrize("measured, moved, load, source, after", [
    # Measured: idle-big relieves 1% (87.25 -> 86.25, still >= 80); the
    # cheapest instance that brings h0 under 80 is busy-small.
    (True, "busy-small", 3.0, "measured", {"h0": 68.5, "h1": 23.75}),
    # Assumed (no instance entries): idle-big's 8 vCPUs would relieve 50%
    # and it uses the least memory, so it goes, and h0 stays busy.
    (False, "idle-big", 8.0, "assumed", {"h0": 86.25, "h1": 6.0}),
])
def test_measured_load_changes_the_instance_moved(conf, engine,
                                                  measured, moved, load,
                                                  source, after):
    fleet = busy_host_fleet(engine, measured)
    assert (fleet.cpu("h0"), fleet.cpu("h1")) == (87.25, 5.0)
    plan = planner(conf, fleet, "evenly_distributed")
    for fleet.minute in range(3):
        fleet.report()
        planned = plan.balance(dry_run=True)
    migration, = planned
    assert (migration.instance_uuid, migration.source_host,
            migration.dest_host) == (moved, "h0", "h1")
    assert (migration.load_vcpus, migration.load_source) == (load, source)
    assert migration.as_dict()["load_percent"] == (
        100.0 if moved == "busy-small" or not measured else 2.0)
    # Where the hosts' utilisation goes once the move is made.
    fleet.placement[moved] = ("h1", *fleet.placement[moved][1:])
    assert {h: fleet.cpu(h) for h in fleet.nodes} == after


def test_migrations_under_way_subtract_their_measured_load(conf, engine):
    # Once busy-small is leaving h0, its measured load no longer counts
    # there: h0 is at 68.5 and nothing more is planned.
    fleet = busy_host_fleet(engine, measured=True)
    plan = planner(conf, fleet, "evenly_distributed")
    for fleet.minute in range(3):
        fleet.report()
        plan.balance(dry_run=True)
    store = migrations_mod.MigrationStore(conf)
    planned, = plan.balance()
    assert planned.instance_uuid == "busy-small"
    active, = store.active()
    # Read back from the table, the load is not known (not stored).
    assert active.load_source is None
    loads = plan._loads(plan.host_manager.host_states(), store.active())
    by_host = {load.state.host: load for load in loads}
    assert by_host["h0"].cpu_percent == pytest.approx(68.5)
    assert {i.uuid for i in by_host["h0"].instances} == {
        "idle-big", "steady-1", "steady-2"}
    assert all(i.load_source == base.MEASURED
               for i in by_host["h0"].instances)
    assert plan.balance() == []
