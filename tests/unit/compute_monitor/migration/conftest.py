"""The migration agent's unit tests' configuration."""

import pytest
from oslo_config import cfg

from compute_monitor.migration import conf as agent_conf
from scheduler.db import api as db_api
from scheduler.db import schema


@pytest.fixture
def agent_config(monitor_config) -> cfg.ConfigOpts:
    """The agent's options on a fresh SQLite database with the schema;
    this node is h0."""
    conf = monitor_config
    agent_conf.register_opts(conf)
    conf.set_override("host", "h0")
    conf.set_override("hypervisor_hostname", "h0.example.org",
                      group="compute_monitor")
    conf.set_override("destination_uri", "fake://{host}/system",
                      group="migration_agent")
    conf.set_override("libvirt_uri", "fake://h0/system",
                      group="migration_agent")
    conf.set_override("poll_interval", 0.1, group="migration_agent")
    schema.db_sync(db_api.get_engine(conf))
    return conf
