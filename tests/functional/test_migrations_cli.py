"""``scheduler-manage migrations list|show|cancel`` on a real database:
a planned move cancelled releases its destination claim; a running one
is flagged for its agent; an ended or unknown one is refused."""

import json
import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import models

MANAGE = "scheduler-manage"
MIGRATIONS = models.Migration.__table__
ALLOCATIONS = models.Allocation.__table__


def _move(connection, state: str, node_id: int) -> str:
    migration = str(uuid.uuid4())
    allocation = str(uuid.uuid4())
    now = models.utcnow()
    connection.execute(ALLOCATIONS.insert().values(
        uuid=allocation, instance_uuid=migration, compute_node_id=node_id,
        vcpus=1, memory_mb=512, disk_gb=0, created_at=now))
    connection.execute(MIGRATIONS.insert().values(
        uuid=migration, instance_uuid=str(uuid.uuid4()), source_node_id=1,
        source_host="big", dest_node_id=node_id, dest_host="mid",
        cluster=None, cluster_policy="test", allocation_id=allocation,
        state=state, created_at=now, updated_at=now))
    return migration


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_list_show_and_cancel(db_url, fleet, run_console_script):
    engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    with engine.begin() as connection:
        mid = connection.execute(sa.select(models.ComputeNode.id).where(
            models.ComputeNode.hypervisor_hostname == "mid")).scalar()
        planned, running, completed = (_move(connection, state, mid) for
                                       state in ("planned", "running",
                                                 "completed"))

    def manage(*args):
        return run_console_script(MANAGE, "migrations", *args,
                                  config_file=fleet)

    listed = manage("list", "--state", "planned", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert [row["uuid"] for row in json.loads(
        listed.stdout)["migrations"]] == [planned]

    result = manage("cancel", planned)
    assert result.returncode == 0, result.stderr
    assert "its destination claim on mid is released" in result.stdout
    shown = json.loads(manage("show", planned, "--format", "json").stdout)
    assert (shown["state"], shown["reason"]) == ("cancelled",
                                                 "cancelled by an operator")

    # A running one is flagged (its agent aborts it:
    # test_migration_agent_kvm's cancel test, with a real agent).
    result = manage("cancel", running)
    assert result.returncode == 0, result.stderr
    assert f"asked the agent of {running} to abort it" in result.stdout

    unknown = manage("cancel", "nope")
    assert (unknown.returncode, unknown.stderr.strip()) == (
        1, "scheduler-manage: error: no migration nope (see migrations "
        "list)")
    refused = manage("cancel", completed)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"scheduler-manage: error: migration {completed} is completed; "
        "only a planned or running one can be cancelled")
    with engine.connect() as connection:
        claims = set(connection.execute(sa.select(
            ALLOCATIONS.c.instance_uuid)).scalars())
        flagged = connection.execute(sa.select(
            MIGRATIONS.c.state, MIGRATIONS.c.cancel_requested).where(
                MIGRATIONS.c.uuid == running)).one()
    # The cancelled move's claim is gone; the running one keeps its
    # claim and state until its agent has aborted it.
    assert planned not in claims and running in claims
    assert tuple(flagged) == ("running", True)
    engine.dispose()
