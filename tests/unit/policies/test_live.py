"""Policies stored by the REST API reach a running manager through the
generation counter read with the host refresh."""

import json
import logging
import uuid

import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.policies import units as policy_units
from tests.fakes import add_node
from tests.fakes import make_manager
from tests.fakes import spec
from tests.unit.placement import test_balance_planner as balance_tests

POLICIES = models.SchedulingPolicy.__table__
UNITS = models.SchedulingPolicyUnit.__table__
SETTINGS = models.ClusterSetting.__table__
GENERATION = models.PolicyGeneration.__table__


def bump(connection) -> None:
    connection.execute(GENERATION.update().values(
        generation=GENERATION.c.generation + 1))


def store_policy(engine, name: str, weighers: dict[str, int],
                 balancer: str | None = None, version: int = 1,
                 properties: dict | None = None) -> str:
    policy_id = str(uuid.uuid4())
    now = models.utcnow()
    with engine.begin() as connection:
        connection.execute(POLICIES.insert().values(
            id=policy_id, name=name, description="", normalization=None,
            balancer=balancer, properties=json.dumps(properties or {}),
            version=version, created_at=now, updated_at=now))
        for ordinal, (unit, factor) in enumerate(weighers.items()):
            connection.execute(UNITS.insert().values(
                policy_id=policy_id, unit_type=policy_units.WEIGHT,
                unit_name=unit, factor=factor, ordinal=ordinal))
        connection.execute(UNITS.insert().values(
            policy_id=policy_id, unit_type=policy_units.FILTER,
            unit_name="RamFilter", ordinal=99))
        bump(connection)
    return policy_id


def attach(engine, cluster: str, policy_id: str) -> None:
    with engine.begin() as connection:
        connection.execute(SETTINGS.insert().values(
            cluster=cluster, scheduling_policy_id=policy_id,
            properties="{}", version=1, updated_at=models.utcnow()))
        bump(connection)


def test_attached_policy_is_used_after_the_next_refresh(unit_ratio_config,
                                                         engine):
    conf = unit_ratio_config
    add_node(engine, "big", vcpus=8, memory_mb=32768)
    add_node(engine, "small", vcpus=2, memory_mb=4096)
    mgr = make_manager(conf)
    assert mgr.explain(spec(cluster="c1"))["selected"][0] == "big"
    packing = store_policy(engine, "packing", {"RAMWeigher": -1})
    attach(engine, "c1", packing)
    # The refresh of the next request reads the counter; the request
    # after it runs the new policy.
    mgr.explain(spec(cluster="c1"))
    decision = mgr.explain(spec(cluster="c1"))
    assert decision["selected"][0] == "small"
    assert decision["policy"] == "packing v1"
    assert mgr.policies.for_cluster("c1").label == "packing v1"
    # Other clusters keep what the config file gives them.
    assert mgr.policies.for_cluster("c2") is None


def test_unchanged_generation_reads_nothing_else(unit_ratio_config, engine):
    conf = unit_ratio_config
    add_node(engine, "a")
    mgr = make_manager(conf)
    mgr.explain(spec())
    statements = []
    # The host refresh's engine (on SQLite every caller's: one engine).
    refresh_engine = db_api.get_engine(conf, pre_ping=False)

    def record(_conn, _cursor, statement, *_args) -> None:
        statements.append(statement)

    sa.event.listen(refresh_engine, "before_cursor_execute", record)
    try:
        mgr.explain(spec())
    finally:
        sa.event.remove(refresh_engine, "before_cursor_execute", record)
    assert not any("scheduling_policies" in s for s in statements)
    generation_reads = [s for s in statements if "policy_generation" in s]
    # Read in the refresh's scan of the changed nodes: no round trip of
    # its own.
    assert len(generation_reads) == 1
    assert "compute_nodes" in generation_reads[0]


def test_cluster_overrides_and_broken_policies(unit_ratio_config, engine):
    conf = unit_ratio_config
    add_node(engine, "a")
    mgr = make_manager(conf)
    balancing = store_policy(engine, "balancing", {"CPUWeigher": 1},
                             balancer="even_distribution",
                             properties={"HighUtilization": 70})
    broken = store_policy(engine, "broken", {"NoSuchWeigher": 1})
    attach(engine, "c1", balancing)
    attach(engine, "c2", broken)
    with engine.begin() as connection:
        connection.execute(SETTINGS.update().where(
            SETTINGS.c.cluster == "c1").values(
            properties=json.dumps({"HighUtilization": 90})))
        bump(connection)
    mgr.explain(spec())
    c1 = mgr.policies.for_cluster("c1")
    assert c1.name == "balancing@c1"
    assert c1.balancer_parameters["HighUtilization"] == 90
    # The broken one is skipped: c2 keeps its configured (no) policy.
    assert mgr.policies.for_cluster("c2") is None
    assert mgr.planner.policies is mgr.policies


def test_policy_edit_changes_the_next_balancing_plan(scheduler_config,
                                                     engine):
    conf = scheduler_config
    conf.set_override("cpu_allocation_ratio", 1.0, group="filter_scheduler")
    conf.set_override("host_subset_size", 1, group="filter_scheduler")
    fleet = balance_tests.standard_fleet(engine, ticks=2)
    spread = store_policy(engine, "spread", {"CPUWeigher": 1},
                          balancer="even_distribution",
                          properties={"HighUtilization": 80})
    attach(engine, "c1", spread)
    mgr = make_manager(conf)
    balance_tests.record_history(fleet, mgr.planner)
    # h0 and h1 stayed over 80 % for the two minutes: one move planned.
    planned = mgr.balance(dry_run=True)
    assert [m["source_host"] for m in planned] == ["h0"]
    assert planned[0]["cluster_policy"] == "spread"
    with engine.begin() as connection:
        connection.execute(POLICIES.update().where(
            POLICIES.c.id == spread).values(
            properties=json.dumps({"HighUtilization": 95}), version=2))
        bump(connection)
    # The next tick's refresh reads the edit: nothing is over 95 %.
    mgr.balance(dry_run=True)
    assert mgr.balance(dry_run=True) == []
    assert mgr.planner.policies.for_cluster("c1").label == "spread v2"


def test_migration_policy_set_through_the_api_is_used(scheduler_config,
                                                      engine):
    conf = scheduler_config
    conf.set_override("cpu_allocation_ratio", 1.0, group="filter_scheduler")
    conf.set_override("host_subset_size", 1, group="filter_scheduler")
    fleet = balance_tests.standard_fleet(engine, ticks=2)
    spread = store_policy(engine, "spread", {"CPUWeigher": 1},
                          balancer="even_distribution")
    attach(engine, "c1", spread)
    with engine.begin() as connection:
        connection.execute(SETTINGS.update().where(
            SETTINGS.c.cluster == "c1").values(
            migration_policy="post_copy", bandwidth_method="custom",
            bandwidth_custom=800))
        bump(connection)
    mgr = make_manager(conf)
    balance_tests.record_history(fleet, mgr.planner)
    planned, = mgr.balance(dry_run=True)
    assert planned["migration_policy"] == "post_copy"
    # post_copy runs 2 migrations at a time: each gets half.
    assert planned["bandwidth_mbps"] == 400


def test_a_dropped_counter_table_fails_no_refresh(unit_ratio_config, engine,
                                                  caplog):
    # A schema downgraded below revision 0004 under a running worker:
    # the counter the refresh's scan carried is gone.
    conf = unit_ratio_config
    add_node(engine, "big", vcpus=8, memory_mb=32768)
    mgr = make_manager(conf)
    packing = store_policy(engine, "packing", {"RAMWeigher": -1})
    attach(engine, "c1", packing)
    mgr.explain(spec(cluster="c1"))
    assert mgr.live_policies.generation is not None
    with engine.begin() as connection:
        connection.execute(sa.text("DROP TABLE policy_generation"))
    add_node(engine, "small", vcpus=2, memory_mb=4096)
    for _ in range(3):
        decision = mgr.explain(spec(cluster="c1"))
        # The hosts are read as before, with the policies in use.
        assert decision["selected"][0] == "small"
        assert decision["policy"] == "packing v1"
    # The scan carries the counter no longer: one failed scan, one
    # warning of each.
    assert mgr.live_policies.generation is None
    assert caplog.text.count("reading them alone") == 1
    assert caplog.text.count("Cannot read stored scheduling policies") == 1
    # 'db sync' brings the table back: the counter is read (and carried
    # by the scan) again, and the reload said at INFO.
    caplog.clear()
    caplog.set_level(logging.INFO)
    GENERATION.create(engine)
    with engine.begin() as connection:
        connection.execute(GENERATION.insert().values(id=1, generation=7))
    mgr.explain(spec(cluster="c1"))
    assert mgr.live_policies.generation == 7
    assert mgr.live_policies.query is not None
    assert "Scheduling policies at generation 7" in caplog.text
