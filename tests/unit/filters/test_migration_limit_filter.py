"""MigrationLimitFilter: incoming migrations per destination host."""

import uuid

import numpy as np
import pytest

from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.filters.migration_limit_filter import MigrationLimitFilter
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec


@pytest.fixture
def conf(scheduler_config):
    return scheduler_config


def plan(conf, dest: int, state: str = "planned") -> None:
    with db_api.get_engine(conf).begin() as connection:
        connection.execute(models.Migration.__table__.insert().values(
            uuid=str(uuid.uuid4()), instance_uuid=str(uuid.uuid4()),
            source_node_id=99, source_host="src", dest_node_id=dest,
            dest_host=f"h{dest}", cluster="c1", cluster_policy="p",
            state=state, created_at=models.utcnow(),
            updated_at=models.utcnow()))


def hosts() -> list[HostState]:
    return [HostState(node_id=i, uuid=str(i), host=f"h{i}",
                      nodename=f"h{i}") for i in (1, 2, 3)]


def spec() -> RequestSpec:
    return RequestSpec.from_dict({"flavor": {"vcpus": 1, "memory_mb": 1,
                                             "root_gb": 0}})


def test_host_at_its_incoming_limit_is_rejected(conf):
    conf.set_override("max_incoming_per_host", 2, group="migration")
    plan(conf, 1)
    plan(conf, 1, "running")
    plan(conf, 2)
    # Finished migrations no longer count.
    plan(conf, 2, "completed")
    plan(conf, 3, "failed")
    verdicts = MigrationLimitFilter(conf).rejections(hosts(), spec())
    assert verdicts[1:] == [None, None]
    assert verdicts[0].reason == "too many incoming migrations"
    assert verdicts[0].detail == "2 incoming, limit 2"


def test_column_form_agrees(conf):
    conf.set_override("max_incoming_per_host", 1, group="migration")
    plan(conf, 3)
    host_filter = MigrationLimitFilter(conf)
    request = spec()
    expected = [r is None for r in host_filter.rejections(hosts(), request)]
    assert expected == [True, True, False]
    assert list(host_filter.passes(HostTable(hosts()), request)) == expected


def test_no_migrations_pass_everyone(conf):
    verdicts = MigrationLimitFilter(conf).passes(HostTable(hosts()), spec())
    assert np.all(verdicts)
