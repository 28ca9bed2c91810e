"""HostManager on PostgreSQL: an incremental refresh reads one change."""

import contextlib
import datetime
import json
import uuid
from collections.abc import Iterator

import sqlalchemy as sa
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler.conf import filter_scheduler
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import schema
from scheduler.hosts.cache.manager import HostManager
from scheduler.policies import cluster as cluster_policy
from scheduler.policies.live import LivePolicies

NODES = models.ComputeNode.__table__
ALLOCATIONS = models.Allocation.__table__
METRIC_NAMES = ("cpu.percent", "cpu.user.percent", "memory.free",
                "memory.used", "network.rx.bps", "disk.iops")


def _metrics(when: datetime.datetime, value: float) -> str:
    stamp = when.isoformat(timespec="microseconds") + "Z"
    return json.dumps([{"name": name, "value": value, "timestamp": stamp,
                        "source": "test"} for name in METRIC_NAMES])


def _node(index: int, when: datetime.datetime) -> dict:
    return {
        "uuid": str(uuid.uuid4()), "host": f"node-{index:03d}",
        "hypervisor_hostname": f"node-{index:03d}", "cluster": "c1",
        "availability_zone": "nova", "vcpus": 16, "memory_mb": 65536,
        "local_gb": 500, "memory_mb_used": 0, "local_gb_used": 0,
        "cpu_info": json.dumps({"arch": "x86_64"}),
        "networks": json.dumps(["physnet1"]),
        "metrics": _metrics(when, float(index)), "metrics_updated_at": when,
        "disabled": False, "generation": 0, "changed_at": when,
        "created_at": when, "updated_at": when,
    }


def _conf(url: str) -> cfg.ConfigOpts:
    """A scheduler ConfigOpts on ``url``, the filter scheduler's options
    at their defaults."""
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf([], project="scheduler")
    for opt in filter_scheduler.filter_scheduler_opts:
        conf.clear_override(opt.name, group="filter_scheduler")
    conf.set_override("connection", url, group="database")
    return conf


def _report_and_claim(engine: sa.Engine, node_id: int,
                      now: datetime.datetime) -> str:
    """A report of node ``node_id`` at ``now`` (cpu.percent 99.5), then a
    claim of 2 vCPUs on it; the claiming instance."""
    instance = str(uuid.uuid4())
    with engine.begin() as connection:
        connection.execute(NODES.update().where(NODES.c.id == node_id)
                           .values(metrics=_metrics(now, 99.5),
                                   metrics_updated_at=now,
                                   changed_at=now))
        connection.execute(ALLOCATIONS.insert().values(
            uuid=str(uuid.uuid4()), instance_uuid=instance,
            compute_node_id=node_id, vcpus=2, memory_mb=2048,
            disk_gb=20, created_at=models.utcnow()))
        connection.execute(NODES.update().where(NODES.c.id == node_id)
                           .values(generation=NODES.c.generation + 1,
                                   changed_at=models.utcnow()))
    return instance


def _drop_other_sessions(url: str) -> int:
    """Terminate the other sessions on the database of ``url``; how
    many."""
    killer = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with killer.begin() as connection:
            return connection.execute(sa.text(
                "SELECT count(pg_terminate_backend(pid)) FROM "
                "pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()")).scalar()
    finally:
        killer.dispose()


@contextlib.contextmanager
def _nodes(url: str, nodes: list[dict]
           ) -> Iterator[tuple[cfg.ConfigOpts, sa.Engine]]:
    """The scheduler's config and engine on ``url``, its schema synced
    and ``nodes`` inserted."""
    conf = _conf(url)
    try:
        engine = db_api.get_engine(conf)
        schema.db_sync(engine)
        with engine.begin() as connection:
            connection.execute(NODES.insert(), nodes)
        yield conf, engine
    finally:
        conf.clear_override("connection", group="database")
        db_api.dispose_engines()


def test_incremental_refresh_reads_one_changed_node(postgresql_url):
    when = models.utcnow() - datetime.timedelta(seconds=30)
    # Agents report at different times: one second apart.
    with _nodes(postgresql_url, [
            _node(i, when - datetime.timedelta(seconds=i))
            for i in range(200)]) as (conf, engine):
        with engine.connect() as connection:
            node_id = connection.execute(sa.select(NODES.c.id).where(
                NODES.c.host == "node-042")).scalar_one()
        manager = HostManager(conf)

        states = manager.host_states()
        assert len(states) == 200
        assert manager.last_refresh.full
        assert manager.last_refresh.rows_decoded == 200

        now = models.utcnow()
        instance = _report_and_claim(engine, node_id, now)

        states = manager.host_states()
        stats = manager.last_refresh
        assert not stats.full
        assert stats.rows_decoded == 1 and stats.rows_fetched == 1
        # Only the change: the overlap window before the watermark is
        # checked by its row count and generation sum.
        assert stats.rows_read == 1
        changed = {s.host: s for s in states}["node-042"]
        assert changed.metrics["cpu.percent"].value == 99.5
        assert changed.metrics["cpu.percent"].timestamp == now
        assert changed.instances == {instance}
        assert changed.vcpus_pending == 2
        assert changed.free_vcpus == 16 * 16.0 - 2

        manager.host_states()
        assert manager.last_refresh.rows_decoded == 0

        # The database drops the pooled connection (a restart, an idle
        # timeout): the next refresh runs again on a new one.
        assert _drop_other_sessions(postgresql_url) >= 1
        assert len(manager.host_states()) == 200


def test_a_policy_counter_dropped_under_a_worker_fails_no_refresh(
        postgresql_url, caplog):
    # The counter of stored policies, carried by the refresh's scan once
    # read, goes with a schema downgraded below revision 0004 while the
    # worker runs: its hosts are read as before, on the same connection
    # (autocommit: the failed scan leaves no transaction aborted).
    when = models.utcnow() - datetime.timedelta(seconds=30)
    with _nodes(postgresql_url,
                [_node(i, when) for i in range(20)]) as (conf, engine):
        manager = HostManager(conf)
        changes: list = []
        live = LivePolicies(conf, cluster_policy.load_policies(conf),
                            changes.append)
        manager.refresh_probes.append(live)
        assert len(manager.host_states()) == 20
        assert live.generation == 0
        with engine.begin() as connection:
            connection.execute(sa.text("DROP TABLE policy_generation"))
            connection.execute(NODES.insert(), [_node(20, models.utcnow())])
        for _ in range(3):
            assert len(manager.host_states()) == 21
            assert not manager.last_refresh.full
        assert live.generation is None and live.current == live.base
        assert "Cannot read stored scheduling policies" in caplog.text
