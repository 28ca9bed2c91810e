"""The libvirt monitor against libvirt's test driver writes instance
entries into a real database, and ``scheduler-manage balance --dry-run
--format json`` plans a move with them (docs/operator-guide.md).

The fleet: h0 (16 vCPUs, cpu.percent 83 for minutes) runs two domains
the scheduler placed, ``idle-big`` (8 vCPUs, 2 GiB) and ``small`` (1
vCPU, 4 GiB); h1 (16 vCPUs) is at 40 %. The test driver runs every
domain's CPU clock at wall-clock speed: each keeps one CPU busy, so
idle-big measures about 12.5 % of its own vCPUs. Either instance leaving
brings h0 under 80; idle-big is the cheaper to migrate. Assumed busy,
its 8 vCPUs would take h1 to 90 %, so without the libvirt monitor the
balancer moves small; measured, idle-big fits on h1 and goes.
"""

import datetime
import json
import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import models
from scheduler.db import schema
from tests.libvirt_support import require_libvirt

IDLE_BIG = "aaaaaaaa-0000-4000-8000-000000000001"
SMALL = "aaaaaaaa-0000-4000-8000-000000000002"
HIGH_LOAD = 83.0
DESTINATION_LOAD = 40.0

NODE_XML = f"""\
<node>
  <cpu><mhz>2400</mhz><nodes>1</nodes><sockets>1</sockets>
    <cores>8</cores><threads>2</threads></cpu>
  <memory>67108864</memory>
  <domain type="test"><name>idle-big</name><uuid>{IDLE_BIG}</uuid>
    <memory unit="MiB">2048</memory>
    <vcpu>8</vcpu><os><type>hvm</type></os></domain>
  <domain type="test"><name>small</name><uuid>{SMALL}</uuid>
    <memory unit="MiB">4096</memory>
    <vcpu>1</vcpu><os><type>hvm</type></os></domain>
</node>
"""


@pytest.fixture
def libvirt_installed():
    require_libvirt()


def agent_config(write_config, tmp_path, url: str, host: str,
                 cpu_percent: float, libvirt: bool):
    metrics = tmp_path / f"{host}.json"
    metrics.write_text(json.dumps({"cpu.percent": cpu_percent}))
    options = {"monitors": ["file", "libvirt"] if libvirt else ["file"],
               "file_path": metrics, "vcpus": 16, "memory_mb": 65536,
               "local_gb": 1000, "cluster": "c1"}
    if libvirt:
        node = tmp_path / "node.xml"
        node.write_text(NODE_XML)
        options["libvirt_uri"] = f"test://{node}"
    return write_config({"DEFAULT": {"host": host},
                         "database": {"connection": url},
                         "compute_monitor": options},
                        name=f"{host}-agent.conf")


def report(run_console_script, config) -> dict:
    result = run_console_script("compute-monitor", "--once",
                                config_file=config)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def plan(db_url, write_config, tmp_path, run_console_script,
         libvirt: bool) -> tuple[dict, list[dict]]:
    """The fleet above; returns the planned migration and h0's metrics
    as stored."""
    engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    schema.db_sync(engine)
    h0 = agent_config(write_config, tmp_path, db_url, "h0", HIGH_LOAD,
                      libvirt)
    h1 = agent_config(write_config, tmp_path, db_url, "h1",
                      DESTINATION_LOAD, False)
    # The first reports register the nodes; the claims go in next, as
    # the scheduler placed the domains, and a later report covers them
    # (a claim newer than the report would count as pending).
    nodes = {host: report(run_console_script, config)["id"]
             for host, config in (("h0", h0), ("h1", h1))}
    now = models.utcnow()
    minute = datetime.timedelta(minutes=1)
    with engine.begin() as connection:
        connection.execute(models.Allocation.__table__.insert(), [
            {"uuid": str(uuid.uuid4()), "instance_uuid": instance,
             "compute_node_id": nodes["h0"], "vcpus": vcpus,
             "memory_mb": memory_mb, "disk_gb": 10, "created_at": now}
            for instance, vcpus, memory_mb in ((IDLE_BIG, 8, 2048),
                                               (SMALL, 1, 4096))])
        # Three minutes of history: h0 stayed busy, as even_distribution
        # wants before it moves anything.
        connection.execute(models.UtilizationSample.__table__.insert(), [
            {"node_id": nodes[host], "reported_at": now - age * minute,
             "cpu_percent": load, "instances": 0}
            for host, load in (("h0", HIGH_LOAD), ("h1", DESTINATION_LOAD))
            for age in (3, 2, 1)])
    stored = report(run_console_script, h0)["metrics"]
    report(run_console_script, h1)
    engine.dispose()
    scheduler = write_config({
        "database": {"connection": db_url},
        "filter_scheduler": {"cpu_allocation_ratio": 1.0},
        "scheduler": {"cluster_policies": "c1:evenly_distributed"}})
    result = run_console_script("scheduler-manage", "balance", "--dry-run",
                                "--format", "json", config_file=scheduler)
    assert result.returncode == 0, result.stderr
    planned, = json.loads(result.stdout)
    return planned, stored


def test_measured_load_moves_the_cheap_idle_instance(
        libvirt_installed, db_url, write_config, tmp_path,
        run_console_script):
    planned, stored = plan(db_url, write_config, tmp_path,
                           run_console_script, libvirt=True)
    # What the monitor wrote: instance entries of both domains.
    entries = {(m["name"], m.get("instance")) for m in stored}
    assert {("instance.cpu.percent", IDLE_BIG), ("instance.cpu.percent",
                                                 SMALL),
            ("instance.memory.used", IDLE_BIG),
            ("instance.memory.used", SMALL)} <= entries
    assert ("hypervisor.instances", None) in entries
    assert (planned["instance_uuid"], planned["source_host"],
            planned["dest_host"]) == (IDLE_BIG, "h0", "h1")
    assert planned["load_source"] == "measured"
    # Far below the 8 vCPUs it would be assumed to keep busy.
    assert planned["load_vcpus"] < 4
    assert planned["vcpus"] == 8
    assert planned["allocation_id"] is None


def test_without_instance_entries_the_load_is_assumed(
        sqlite_url, write_config, tmp_path, run_console_script):
    planned, stored = plan(sqlite_url, write_config, tmp_path,
                           run_console_script, libvirt=False)
    assert not any("instance" in m for m in stored)
    assert (planned["instance_uuid"], planned["load_source"],
            planned["load_vcpus"], planned["load_percent"]) == (
        SMALL, "assumed", 1.0, 100.0)


def test_missing_libvirt_python_stops_the_agent_with_one_line(
        sqlite_url, write_config, tmp_path, run_console_script):
    # A "libvirt" module that fails to import, found first on the path:
    # what an agent without libvirt-python meets.
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "libvirt.py").write_text(
        "raise ImportError(\"No module named 'libvirt'\")\n")
    config = agent_config(write_config, tmp_path, sqlite_url, "h0",
                          HIGH_LOAD, True)
    result = run_console_script("compute-monitor", "--once",
                                config_file=config,
                                env={"PYTHONPATH": str(shadow)})
    assert result.returncode == 2
    line, = result.stderr.strip().splitlines()
    assert line.startswith("compute-monitor: error: invalid value "
                           "'libvirt' for [compute_monitor] monitors: ")
    assert "libvirt-python is not installed" in line
    assert "Traceback" not in result.stderr
