"""``migration-agent`` carries planned moves out between two real
hypervisors (two private libvirtd, tests/functional/kvm_nodes.py) with
real QEMU guests, recording each move in PostgreSQL.

* A move the balancer planned (``scheduler-manage balance``) ends with
  the guest running on the destination, the row completed and the
  claims moved.
* A migration policy whose schedule aborts at the first stalled
  iteration, on a guest that dirties memory faster than the bandwidth
  lets the move converge: failed, the guest still on the source, the
  destination claim released.
* Two moves into one node with [migration] max_incoming_per_host 1 and
  two agents racing for them: each taken once, never both running.
"""

import datetime
import json
import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import models
from scheduler.db import schema
from tests import fakes
from tests.functional import kvm_nodes
from tests.functional import private_servers
from tests.libvirt_support import require_libvirt

MIGRATIONS = models.Migration.__table__
ALLOCATIONS = models.Allocation.__table__
NODES = models.ComputeNode.__table__
SOURCE, DEST = "h0", "h1"

ABORT_ON_STALL = {
    "id": "abort_on_stall", "name": "Abort on stall", "maxMigrations": 1,
    "autoConvergence": False, "migrationCompression": False,
    "enableGuestEvents": False,
    "config": {"initialItems": [{"action": "setDowntime", "params": [1]}],
               "convergenceItems": [],
               "lastItems": [{"action": "abort", "params": []}]}}


@pytest.fixture(scope="module")
def hypervisors(tmp_path_factory):
    """The guests' initramfs and the libvirtd of h0 and h1."""
    require_libvirt()
    absent = kvm_nodes.missing_tools()
    if absent:
        private_servers.missing(f"hypervisor ({', '.join(absent)} missing)")
    root = tmp_path_factory.mktemp("kvm")
    initrd = kvm_nodes.build_initramfs(root)
    nodes = {}
    try:
        for name in (SOURCE, DEST):
            nodes[name] = kvm_nodes.LibvirtNode(root, name).start()
        yield root, initrd, nodes
    finally:
        for node in nodes.values():
            node.terminate()
        for node in nodes.values():
            node.close()


@pytest.fixture
def boot(hypervisors):
    """Boots a guest on h0: ``boot(name, dirty_mib=0)`` -> its uuid. The
    test's guests are destroyed after it, wherever they are (a guest
    dirtying memory keeps a CPU busy)."""
    root, initrd, nodes = hypervisors

    def start(name: str, dirty_mib: int = 0) -> str:
        instance = str(uuid.uuid4())
        console = root / f"{name}.console"
        connection = nodes[SOURCE].connect()
        try:
            connection.createXML(kvm_nodes.guest_xml(
                name, instance, initrd, console, dirty_mib), 0)
        finally:
            connection.close()
        if dirty_mib:
            # Its init starts the dirtier just before it says so.
            kvm_nodes.wait_for(f"guest {name} boots", lambda: console.exists()
                               and "GUEST-UP" in console.read_text())
        return instance

    yield start
    for node in nodes.values():
        node.destroy_guests()


def agent_config(write_config, hypervisors, url: str,
                 migration: dict | None = None, lease: int = 10):
    root, _, nodes = hypervisors
    return write_config({
        "DEFAULT": {"host": SOURCE},
        "database": {"connection": url},
        "migration": migration or {},
        "migration_agent": {
            "libvirt_uri": nodes[SOURCE].uri,
            "destination_uri":
                f"qemu+unix:///system?socket={root}/{{host}}/sock/"
                "libvirt-sock",
            "migration_uri": "tcp://127.0.0.1",
            "poll_interval": 0.3, "lease": lease}},
        name="agent.conf")


def register(run_console_script, write_config, tmp_path, url: str,
             loads: dict[str, float]) -> dict[str, int]:
    """compute-monitor --once for each node; their ids."""
    ids = {}
    for host, load in loads.items():
        metrics = tmp_path / f"{host}.json"
        metrics.write_text(json.dumps({"cpu.percent": load}))
        config = write_config({
            "DEFAULT": {"host": host}, "database": {"connection": url},
            "compute_monitor": {"monitors": ["file"], "file_path": metrics,
                                "vcpus": 16, "memory_mb": 65536,
                                "local_gb": 1000, "cluster": "c1"}},
            name=f"{host}.conf")
        result = run_console_script("compute-monitor", "--once",
                                    config_file=config)
        assert result.returncode == 0, result.stderr
        ids[host] = json.loads(result.stdout)["id"]
    return ids


def nodes_of(engine) -> dict[str, int]:
    """h0 and h1 as their compute-monitor registers them (the tests that
    do not need the balancer skip the processes)."""
    return {host: fakes.add_node(engine, host, vcpus=16, memory_mb=65536,
                                 hypervisor_hostname=host)
            for host in (SOURCE, DEST)}


def claim(connection, instance: str, node_id: int) -> str:
    allocation = str(uuid.uuid4())
    connection.execute(ALLOCATIONS.insert().values(
        uuid=allocation, instance_uuid=instance, compute_node_id=node_id,
        vcpus=1, memory_mb=128, disk_gb=0, created_at=models.utcnow()))
    return allocation


def plan(connection, instance: str, ids: dict[str, int],
         policy: str | None = None) -> str:
    """A planned move h0 -> h1 with its destination claim, as the
    balancer writes it."""
    migration = str(uuid.uuid4())
    now = models.utcnow()
    connection.execute(MIGRATIONS.insert().values(
        uuid=migration, instance_uuid=instance, source_node_id=ids[SOURCE],
        source_host=SOURCE, dest_node_id=ids[DEST], dest_host=DEST,
        cluster="c1", cluster_policy="test", migration_policy=policy,
        allocation_id=claim(connection, migration, ids[DEST]),
        state="planned", created_at=now, updated_at=now,
        cancel_requested=False))
    return migration


def dirtier_move(engine, boot, policy: str) -> tuple[str, dict, str]:
    """The schema, h0 and h1, a guest dirtying 48 MiB on h0 with its
    claim, and its move to h1 planned under ``policy``: (instance, node
    ids, migration)."""
    schema.db_sync(engine)
    instance = boot(f"dirtier-{policy}", dirty_mib=48)
    ids = nodes_of(engine)
    with engine.begin() as connection:
        claim(connection, instance, ids[SOURCE])
        migration = plan(connection, instance, ids, policy)
    return instance, ids, migration


def stayed(hypervisors, engine, instance: str, ids: dict,
           migration: str) -> None:
    """A failed move left the instance where it was: running on h0 only,
    its claim there, the destination claim released."""
    _, _, nodes = hypervisors
    assert instance in nodes[SOURCE].running()
    assert instance not in nodes[DEST].running()
    assert claims_of(engine, instance) == [ids[SOURCE]]
    assert claims_of(engine, migration) == []


def stored(engine, migration: str):
    with engine.connect() as connection:
        return connection.execute(sa.select(MIGRATIONS).where(
            MIGRATIONS.c.uuid == migration)).mappings().one()


def ended(engine, migration: str):
    kvm_nodes.wait_for(f"migration {migration} ends", lambda: stored(
        engine, migration)["state"] not in ("planned", "running"))
    return stored(engine, migration)


def claims_of(engine, consumer: str) -> list[int]:
    with engine.connect() as connection:
        return list(connection.execute(sa.select(
            ALLOCATIONS.c.compute_node_id).where(
                ALLOCATIONS.c.instance_uuid == consumer)).scalars())


def test_a_balancer_planned_move_is_carried_out(
        hypervisors, boot, postgresql_url, write_config, tmp_path,
        run_console_script, start_console_script):
    engine = sa.create_engine(postgresql_url, poolclass=sa.pool.NullPool)
    schema.db_sync(engine)
    instance = boot("planned-by-balancer")
    ids = register(run_console_script, write_config, tmp_path,
                   postgresql_url, {SOURCE: 83.0, DEST: 40.0})
    now = models.utcnow()
    with engine.begin() as connection:
        claim(connection, instance, ids[SOURCE])
        # Three minutes busy: even_distribution moves only then.
        connection.execute(models.UtilizationSample.__table__.insert(), [
            {"node_id": ids[host], "reported_at": now - datetime.timedelta(
                minutes=age), "cpu_percent": load, "instances": 0}
            for host, load in ((SOURCE, 83.0), (DEST, 40.0))
            for age in (3, 2, 1)])
    # Reports newer than the claim: it counts as placed, not pending.
    register(run_console_script, write_config, tmp_path, postgresql_url,
             {SOURCE: 83.0, DEST: 40.0})
    scheduler = write_config({
        "database": {"connection": postgresql_url},
        "filter_scheduler": {"cpu_allocation_ratio": 1.0},
        "scheduler": {"cluster_policies": "c1:evenly_distributed"}},
        name="scheduler.conf")
    result = run_console_script("scheduler-manage", "balance", "--format",
                                "json", config_file=scheduler)
    assert result.returncode == 0, result.stderr
    planned, = json.loads(result.stdout)
    assert (planned["instance_uuid"], planned["dest_host"]) == (instance,
                                                                DEST)
    agent = start_console_script(
        "migration-agent", config_file=agent_config(
            write_config, hypervisors, postgresql_url))
    row = ended(engine, planned["uuid"])
    assert (row["state"], row["progress"], row["reason"]) == (
        "completed", 100, None), agent.stderr
    _, _, nodes = hypervisors
    assert instance in nodes[DEST].running()
    assert instance not in nodes[SOURCE].running()
    # The instance's one claim is now on the destination.
    assert claims_of(engine, instance) == [ids[DEST]]
    assert claims_of(engine, planned["uuid"]) == []
    assert f"Migration {planned['uuid']} of instance {instance} from h0 " \
           f"to h1 completed" in agent.stderr
    engine.dispose()


def test_a_policy_aborting_on_stall_fails_the_move_source_intact(
        hypervisors, boot, postgresql_url, write_config, tmp_path,
        start_console_script):
    engine = sa.create_engine(postgresql_url, poolclass=sa.pool.NullPool)
    # 48 MiB rewritten in a loop, sent at 400 Mbps with 1 ms of downtime:
    # every pass leaves more dirty pages than the downtime allows.
    instance, ids, migration = dirtier_move(engine, boot,
                                            ABORT_ON_STALL["id"])
    policies = tmp_path / "policies.json"
    policies.write_text(json.dumps([ABORT_ON_STALL]))
    agent = start_console_script(
        "migration-agent", config_file=agent_config(
            write_config, hypervisors, postgresql_url,
            {"policies_file": policies, "bandwidth": 400}))
    row = ended(engine, migration)
    assert row["state"] == "failed", agent.stderr
    # The first stalled iteration libvirt reports (a fast pass may be
    # over between two polls).
    assert row["reason"].startswith(
        "aborted by migration policy abort_on_stall at stalled iteration ")
    stayed(hypervisors, engine, instance, ids, migration)
    engine.dispose()


def test_two_agents_keep_max_incoming_one_and_take_each_move_once(
        hypervisors, boot, postgresql_url, write_config,
        start_console_script):
    engine = sa.create_engine(postgresql_url, poolclass=sa.pool.NullPool)
    schema.db_sync(engine)
    instances = [boot(f"pair-{n}") for n in range(2)]
    ids = nodes_of(engine)
    with engine.begin() as connection:
        moves = []
        for instance in instances:
            claim(connection, instance, ids[SOURCE])
            moves.append(plan(connection, instance, ids))
    config = agent_config(write_config, hypervisors, postgresql_url,
                          {"max_incoming_per_host": 1,
                           "max_outgoing_per_host": 2})
    agents = [start_console_script("migration-agent", config_file=config)
              for _ in range(2)]
    rows = [ended(engine, move) for move in moves]
    logs = "".join(agent.stderr for agent in agents)
    assert [row["state"] for row in rows] == ["completed"] * 2, logs
    for move in moves:
        assert logs.count(f"Migration {move} taken") == 1
    # One after the other into h1: the second started after the first
    # ended.
    first, second = sorted(rows, key=lambda row: row["started_at"])
    assert second["started_at"] >= first["updated_at"]
    _, _, nodes = hypervisors
    assert set(instances) <= nodes[DEST].running()
    for instance in instances:
        assert claims_of(engine, instance) == [ids[DEST]]
    engine.dispose()


def test_a_dead_agents_move_is_taken_over_and_ended_by_where_it_runs(
        hypervisors, boot, postgresql_url, write_config,
        start_console_script):
    engine = sa.create_engine(postgresql_url, poolclass=sa.pool.NullPool)
    # At 40 Mbps with 48 MiB dirtied in a loop, and the legacy policy
    # (no schedule): the move would never end by itself.
    instance, ids, migration = dirtier_move(engine, boot, "legacy")
    config = agent_config(write_config, hypervisors, postgresql_url,
                          {"bandwidth": 40}, lease=3)
    doomed = start_console_script("migration-agent", config_file=config)
    kvm_nodes.wait_for("the move makes progress", lambda: (
        stored(engine, migration)["progress"] or 0) > 0)
    doomed.popen.kill()
    doomed.popen.wait()
    heir = start_console_script("migration-agent", config_file=config)
    row = ended(engine, migration)
    assert (row["state"], row["reason"]) == (
        "failed", f"agent h0:{doomed.popen.pid} lost its lease; the "
        "instance is still on the source"), heir.stderr
    stayed(hypervisors, engine, instance, ids, migration)
    engine.dispose()


def test_cancelling_a_running_move_has_its_agent_abort_it(
        hypervisors, boot, postgresql_url, write_config,
        run_console_script, start_console_script):
    engine = sa.create_engine(postgresql_url, poolclass=sa.pool.NullPool)
    # Legacy policy at 40 Mbps: the move runs until it is cancelled.
    instance, ids, migration = dirtier_move(engine, boot, "legacy")
    config = agent_config(write_config, hypervisors, postgresql_url,
                          {"bandwidth": 40})
    agent = start_console_script("migration-agent", config_file=config)
    kvm_nodes.wait_for("the move makes progress", lambda: (
        stored(engine, migration)["progress"] or 0) > 0)
    result = run_console_script("scheduler-manage", "migrations", "cancel",
                                migration, config_file=config)
    assert result.returncode == 0, result.stderr
    row = ended(engine, migration)
    assert (row["state"], row["reason"]) == (
        "cancelled", "cancelled by an operator"), agent.stderr
    stayed(hypervisors, engine, instance, ids, migration)
    engine.dispose()
