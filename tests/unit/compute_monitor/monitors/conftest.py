"""Fixtures of the monitor tests: a compute monitor ConfigOpts writing
under tmp_path, and its metrics file."""


import pytest
from oslo_config import cfg

import compute_monitor.conf
from compute_monitor.monitors import _delta
from tests.unit.compute_monitor.monitors.fakes import FakeClock


@pytest.fixture
def conf(tmp_path):
    conf = cfg.ConfigOpts()
    compute_monitor.conf.register_opts(conf)
    # No config files or OS_* variables of the machine running the tests.
    conf([], default_config_files=[], default_config_dirs=[],
         use_env=False)
    conf.set_override("file_path", str(tmp_path / "metrics.json"),
                      group="compute_monitor")
    conf.set_override("instances_path", str(tmp_path),
                      group="compute_monitor")
    return conf


@pytest.fixture
def metrics_file(conf):
    return conf.compute_monitor.file_path


@pytest.fixture
def clock(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(_delta, "time", clock)
    return clock
