"""``--fleet`` files: node kinds, per-node capacity; bad files named in
one line."""

import json

import numpy as np
import pytest
import sqlalchemy as sa

from scheduler.db import tables
from scheduler.simulation import fleet


def _read(tmp_path, text: str) -> fleet.FleetSpec:
    path = tmp_path / "fleet.csv"
    path.write_text(text)
    return fleet.read_fleet(str(path))


def test_kinds_in_order(tmp_path):
    spec = _read(tmp_path, "count,vcpus,memory_mb,cluster,disk_gb\n"
                 "2,8,32768,c1,\n1,16,65536,c2,500\n")
    assert spec.hosts == 3
    np.testing.assert_array_equal(spec.node_vcpus(), [8, 8, 16])
    third = spec.node(2)
    assert (third.vcpus, third.memory_mb, third.disk_gb, third.cluster,
            third.availability_zone) == (16, 65536, 500, "c2", "nova")
    assert spec.cluster(0) == "c1"
    assert spec.node(0).disk_gb == fleet.DEFAULT_DISK_GB


def test_uniform_fleet_unchanged():
    spec = fleet.FleetSpec(4, 32, 1024, clusters=2)
    np.testing.assert_array_equal(spec.node_vcpus(), [32] * 4)
    assert spec.node(3).cluster == spec.cluster(3) == "sim-c1"


@pytest.mark.parametrize("text, message", [
    ("count,vcpus\n1,2\n", "missing: memory_mb"),
    ("count,vcpus,memory_mb,colour\n1,2,3,red\n", "unknown: colour"),
    ("count,vcpus,memory_mb\n1,two,3\n", ":2: vcpus 'two' is not a whole"),
    ("count,vcpus,memory_mb\n0,2,3\n", "count 0 must be at least 1"),
    ("count,vcpus,memory_mb\n1,2\n", "expected the columns"),
    ("count,vcpus,memory_mb\n", "names no node"),
    ("", "header must name"),
])
def test_bad_files(tmp_path, text, message):
    with pytest.raises(fleet.FleetError, match=message) as caught:
        _read(tmp_path, text)
    assert "\n" not in str(caught.value)


def test_unreadable_file(tmp_path):
    with pytest.raises(fleet.FleetError, match="cannot read fleet"):
        fleet.read_fleet(str(tmp_path / "missing.csv"))


def test_reports_keep_the_instance_entries_apart(engine):
    # As the agent writes them (schema revision 0007).
    simulated = fleet.SimulatedFleet(engine, fleet.FleetSpec(2, 8, 16384))
    simulated.create()
    held = {0: [("vm-a", 25.0), ("vm-b", 50.0)], 1: []}
    simulated.report(np.array([0, 1]), np.array([30.0, 0.0]),
                     np.array([4096, 512]), [(0, 0), (0, 0)],
                     held.__getitem__)
    with engine.connect() as connection:
        rows = connection.execute(sa.select(
            tables.NODES.c.metrics, tables.NODES.c.instance_metrics
        ).order_by(tables.NODES.c.host)).all()
    for metrics, _ in rows:
        assert not [entry for entry in json.loads(metrics)
                    if "instance" in entry]
    assert [(entry["instance"], entry["value"])
            for entry in json.loads(rows[0][1])] == [("vm-a", 25.0),
                                                     ("vm-b", 50.0)]
    assert rows[1][1] is None


def test_report_phases_deal_the_nodes_round_robin():
    phases = fleet.report_phases(30)
    assert len(phases) == fleet.MAX_PHASES
    assert phases[0].tolist() == [0, 12, 24]
    assert phases[11].tolist() == [11, 23]
    assert [phase.tolist() for phase in fleet.report_phases(3)] == [
        [0], [1], [2]]


def test_the_nodes_of_a_phase_are_stored_together(engine):
    # One phase's rows side by side in SQLite's rowid order, so that its
    # commit rewrites few pages; each name keeps its own row.
    simulated = fleet.SimulatedFleet(engine, fleet.FleetSpec(30, 8, 16384))
    simulated.create()
    for phase in fleet.report_phases(30):
        ids = [simulated.node_ids[i] for i in phase.tolist()]
        assert ids == list(range(ids[0], ids[0] + len(ids)))
    with engine.connect() as connection:
        stored = dict(connection.execute(sa.select(
            tables.NODES.c.id, tables.NODES.c.host)).all())
    assert [stored[node] for node in simulated.node_ids] == [
        fleet.host_name(i) for i in range(30)]
    assert simulated.index_of == {
        node: i for i, node in enumerate(simulated.node_ids)}
