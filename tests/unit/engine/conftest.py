"""Fixtures of the engine's tests."""

from collections.abc import Iterator

import pytest
from oslo_config import cfg

from scheduler import conf as scheduler_conf


@pytest.fixture
def conf() -> Iterator[cfg.ConfigOpts]:
    """A private ConfigOpts with the scheduler's options and their
    defaults (no configuration file read)."""
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    yield conf
    # Overrides of the module-level OptGroups would outlive the test.
    conf.reset()
