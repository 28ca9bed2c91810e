"""compute_monitor.monitors.disk: I/O rates and usage of the instances path."""

import logging

import pytest

from compute_monitor.monitors import disk
from tests.fakes import exceptions_at_warnings
from tests.unit.compute_monitor.monitors.fakes import DiskIO
from tests.unit.compute_monitor.monitors.fakes import DiskUsage
from tests.unit.compute_monitor.monitors.fakes import Readings
from tests.unit.compute_monitor.monitors.fakes import values

# disk


def make_disk(monkeypatch, conf, *io):
    monkeypatch.setattr(disk.psutil, "disk_io_counters", Readings(*io))
    usage = Readings(*[DiskUsage(total=100 << 30, used=25 << 30,
                                 free=75 << 30, percent=25.0)] * 5)
    monkeypatch.setattr(disk.psutil, "disk_usage", usage)
    return disk.DiskMonitor(conf), usage


def test_disk_rates_and_usage_of_instances_path(monkeypatch, conf, clock,
                                                tmp_path):
    plugin, usage = make_disk(monkeypatch, conf,
                              DiskIO(10, 20, 4096, 8192),
                              DiskIO(30, 60, 4096 + 40960, 8192 + 81920))
    clock.now += 10
    got = values(plugin)
    assert got == {"disk.read.bps": pytest.approx(4096.0),
                   "disk.write.bps": pytest.approx(8192.0),
                   "disk.iops": pytest.approx(6.0),
                   "disk.total": 100 << 30, "disk.used": 25 << 30,
                   "disk.free": 75 << 30, "disk.percent": 25.0}
    assert set(got) == plugin.get_metric_names()
    assert usage.calls == [((str(tmp_path),), {})]


def test_disk_without_io_counters_reports_usage_only(monkeypatch, conf,
                                                     clock):
    plugin, _ = make_disk(monkeypatch, conf, None, None)
    clock.now += 10
    got = values(plugin)
    assert set(got) == {"disk.total", "disk.used", "disk.free",
                        "disk.percent"}


def test_disk_counters_going_backwards_count_as_zero(monkeypatch, conf,
                                                     clock):
    plugin, _ = make_disk(monkeypatch, conf, DiskIO(100, 100, 10**6, 10**6),
                          DiskIO(50, 150, 10**5, 2 * 10**6))
    clock.now += 1
    got = values(plugin)
    assert got["disk.read.bps"] == 0
    assert got["disk.write.bps"] == pytest.approx(10**6)
    assert got["disk.iops"] == pytest.approx(50.0)


def test_disk_bad_instances_path_keeps_io_rates(monkeypatch, conf, clock,
                                                tmp_path, caplog):
    missing = str(tmp_path / "nope")
    conf.set_override("instances_path", missing, group="compute_monitor")
    monkeypatch.setattr(disk.psutil, "disk_io_counters",
                        Readings(DiskIO(0, 0, 0, 0), DiskIO(1, 1, 1, 1)))
    plugin = disk.DiskMonitor(conf)
    clock.now += 1
    with caplog.at_level(logging.WARNING), \
            exceptions_at_warnings(disk.LOG.logger.name) as exceptions:
        got = values(plugin)
    assert set(got) == {"disk.read.bps", "disk.write.bps", "disk.iops"}
    assert missing in caplog.text
    assert exceptions == [None]
