"""The claims' functional tests' scheduler configuration on a database
URL, and a fleet of one node on a fresh schema."""

import uuid

from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import schema
from tests.functional.fault_harness import NODES

#: ``host_subset_size`` > 1: the workers' choices overlap less
#: predictably, which is how real deployments collide.
SUBSET_SIZE = 5


def claims_config(url: str, cluster_lock: bool = False) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    conf.set_override("connection", url, group="database")
    conf.set_override("host_subset_size", SUBSET_SIZE,
                      group="filter_scheduler")
    conf.set_override("cpu_allocation_ratio", 1.0, group="filter_scheduler")
    # Heartbeats are written once, at the start.
    conf.set_override("service_down_time", 3600, group="filter_scheduler")
    conf.set_override("cluster_lock", cluster_lock, group="scheduler")
    return conf


def one_node(url: str, **values: object) -> tuple:
    """Config, engine and the id of the one node ``h1`` (100 GB of disk
    and ``values``) of a fresh schema at ``url``."""
    conf = claims_config(url)
    engine = db_api.get_engine(conf)
    schema.db_sync(engine)
    now = models.utcnow()
    with engine.begin() as connection:
        node = connection.execute(NODES.insert().values(
            uuid=str(uuid.uuid4()), host="h1", hypervisor_hostname="h1",
            local_gb=100, changed_at=now, updated_at=now,
            **values)).inserted_primary_key[0]
    return conf, engine, node
