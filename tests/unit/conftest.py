"""Fixtures shared by the unit tests."""

import pytest
from oslo_config import cfg

from compute_monitor import conf as monitor_conf
from scheduler import conf as scheduler_conf
from scheduler.db import api as db_api
from scheduler.db import schema
from tests import fakes


@pytest.fixture
def monitor_config(tmp_path) -> cfg.ConfigOpts:
    """A private ConfigOpts with the agent's options, on a fresh SQLite."""
    conf = cfg.ConfigOpts()
    monitor_conf.register_opts(conf)
    conf([], project="compute_monitor")
    conf.set_override("connection", f"sqlite:///{tmp_path}/unit.sqlite",
                      group="database")
    conf.set_override("host", "node-1")
    yield conf
    db_api.dispose_engines()


@pytest.fixture
def synced_monitor_config(monitor_config) -> cfg.ConfigOpts:
    schema.db_sync(db_api.get_engine(monitor_config))
    return monitor_config


@pytest.fixture
def scheduler_config(tmp_path) -> cfg.ConfigOpts:
    """A private ConfigOpts with the scheduler's options, on a fresh
    SQLite database with the schema."""
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    conf.set_override("connection", f"sqlite:///{tmp_path}/scheduler.sqlite",
                      group="database")
    conf.set_override("state_path", str(tmp_path))
    schema.db_sync(db_api.get_engine(conf))
    yield conf
    db_api.dispose_engines()


@pytest.fixture
def unit_ratio_config(scheduler_config) -> cfg.ConfigOpts:
    """``scheduler_config`` with every allocation ratio 1.0: capacity is
    what a node has, which keeps the arithmetic of the tests plain."""
    for name in ("cpu_allocation_ratio", "ram_allocation_ratio",
                 "disk_allocation_ratio"):
        scheduler_config.set_override(name, 1.0, group="filter_scheduler")
    return scheduler_config


@pytest.fixture
def engine(scheduler_config):
    return db_api.get_engine(scheduler_config)


@pytest.fixture
def conf(unit_ratio_config) -> cfg.ConfigOpts:
    """The configuration of the tests that drive a ``SchedulerManager``;
    a module with other needs defines its own ``conf``."""
    return unit_ratio_config


@pytest.fixture
def mgr(conf):
    return fakes.make_manager(conf)
