"""A balancing tick on PostgreSQL and MariaDB: the destination claim, the
migration row, the shared history and two workers ticking together."""

import threading
from unittest import mock

import pytest
import sqlalchemy as sa

from scheduler.balancer import history as history_mod
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.hosts.cache.manager import HostManager
from scheduler.placement import migrations as migrations_mod
from tests.unit.placement.fakes import claims_by_instance
from tests.unit.placement.fakes import planner
from tests.unit.placement.fakes import standard_fleet

MIGRATIONS = models.Migration.__table__
SAMPLES = models.UtilizationSample.__table__


@pytest.fixture
def conf(db_url, balancing_conf):
    return balancing_conf(db_url)


@pytest.mark.parametrize("db_url", ["postgresql", "mysql"], indirect=True)
def test_a_tick_claims_and_records(conf):
    engine = db_api.get_engine(conf)
    fleet = standard_fleet(engine, ticks=2)
    seen = []
    plan = planner(conf, fleet, "evenly_distributed", on_planned=seen.append,
                   max_incoming=1, max_outgoing=1)
    for fleet.minute in range(3):
        fleet.report()
        planned = plan.balance()
    migration_, = planned
    assert migration_.source_host == "h0"
    claims = claims_by_instance(engine)
    # The instance keeps its claim; the migration holds the destination.
    assert claims[migration_.instance_uuid] == "h0"
    assert claims[migration_.uuid] == migration_.dest_host
    with engine.connect() as connection:
        row = connection.execute(sa.select(MIGRATIONS)).one()
        samples = connection.execute(
            sa.select(sa.func.count()).select_from(SAMPLES)).scalar()
    assert (row.uuid, row.state, row.allocation_id, row.cluster_policy) == (
        migration_.uuid, "planned", migration_.allocation_id,
        "evenly_distributed")
    assert samples == 30
    assert seen == [migration_.as_dict()]

    assert migrations_mod.MigrationStore(conf).finish(
        migration_.uuid, migrations_mod.COMPLETED)
    assert claims_by_instance(engine)[migration_.instance_uuid] == \
        migration_.dest_host


@pytest.mark.parametrize("db_url", ["postgresql", "mysql"], indirect=True)
def test_two_workers_ticking_together_plan_within_limits(conf):
    engine = db_api.get_engine(conf)
    fleet = standard_fleet(engine, ticks=2)
    workers = [planner(conf, fleet, "evenly_distributed", max_incoming=1,
                       max_outgoing=1) for _ in range(2)]
    for fleet.minute in range(2):
        fleet.report()
        for worker in workers:
            assert worker.balance() == []
    fleet.minute = 2
    fleet.report()
    results = []
    threads = [threading.Thread(target=lambda w=worker: results.append(
        w.balance())) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    planned = [m for result in results for m in result]
    # The cluster lock: the second worker saw the first one's migration
    # and its source at the limit.
    assert len(planned) == 2
    assert sorted(m.source_host for m in planned) == ["h0", "h1"]
    assert len({m.dest_host for m in planned}) == 2
    assert len({m.instance_uuid for m in planned}) == 2


@pytest.mark.parametrize("db_url", ["postgresql", "mysql"], indirect=True)
def test_a_report_recorded_by_two_workers_is_kept_once(conf):
    engine = db_api.get_engine(conf)
    fleet = standard_fleet(engine, ticks=0)
    fleet.report()
    hosts = HostManager(conf).host_states()
    # Both workers read the history before either wrote: the second
    # insert meets the unique (node_id, reported_at) and is skipped.
    stores = [history_mod.SampleStore(conf) for _ in range(2)]
    with mock.patch.object(history_mod, "_read_all",
                           side_effect=lambda connection: ({}, 0)):
        histories = [store.record(hosts, 2) for store in stores]
    with engine.connect() as connection:
        count = connection.execute(
            sa.select(sa.func.count()).select_from(SAMPLES)).scalar()
    assert count == len(hosts) == 10
    assert [len(h.samples(hosts[0].node_id)) for h in histories] == [1, 1]
