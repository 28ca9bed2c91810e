"""Unit tests of the built-in compute monitor plugins."""

import collections
import math

import psutil
import pytest
from stevedore import driver

from compute_monitor import base
from compute_monitor.monitors import _delta
from compute_monitor.monitors import cpu
from compute_monitor.monitors import memory
from compute_monitor.monitors import network
from tests.unit.compute_monitor.monitors.fakes import Readings
from tests.unit.compute_monitor.monitors.fakes import values
from tests.unit.compute_monitor.monitors.fakes import write

CpuTimes = collections.namedtuple(
    "CpuTimes", "user nice system idle iowait irq softirq steal guest "
    "guest_nice", defaults=(0.0,) * 10)
# As on platforms without iowait/irq (e.g. macOS).
BareCpuTimes = collections.namedtuple("BareCpuTimes", "user nice system idle")
NetIO = collections.namedtuple("NetIO", "bytes_sent bytes_recv")
VirtualMemory = collections.namedtuple(
    "VirtualMemory", "total available percent used free")
CpuFreq = collections.namedtuple("CpuFreq", "current min max")


# DeltaSampler


def test_sampler_sleeps_up_to_the_minimum_window_on_a_short_first_call(
        clock):
    sampler = _delta.DeltaSampler(Readings(1, 2, 3, 4))
    clock.now += 0.1
    assert sampler.sample() == (1, 2, pytest.approx(0.25))
    assert clock.sleeps == [pytest.approx(0.15)]
    clock.now += 60
    assert sampler.sample() == (2, 3, pytest.approx(60))
    assert len(clock.sleeps) == 1
    # Back-to-back calls are stretched again.
    assert sampler.sample() == (3, 4, pytest.approx(0.25))
    assert clock.sleeps[1] == pytest.approx(0.25)


def test_sampler_keeps_its_baseline_when_reading_fails(clock):
    sampler = _delta.DeltaSampler(Readings(1, OSError("gone"), 2))
    clock.now += 10
    with pytest.raises(OSError):
        sampler.sample()
    clock.now += 10
    assert sampler.sample() == (1, 2, pytest.approx(20))


def test_increase_never_negative():
    assert _delta.increase(10, 25) == 15
    assert _delta.increase(25, 10) == 0


# cpu


@pytest.fixture
def cpu_freq(monkeypatch):
    freq = Readings(*[CpuFreq(2400.5, 800.0, 3600.0)] * 10)
    monkeypatch.setattr(cpu.psutil, "cpu_freq", freq)
    return freq


def make_cpu(monkeypatch, conf, *times):
    monkeypatch.setattr(cpu.psutil, "cpu_times", Readings(*times))
    return cpu.CpuMonitor(conf)


def test_cpu_percentages_from_the_delta_of_two_samples(
        monkeypatch, conf, clock, cpu_freq):
    plugin = make_cpu(
        monkeypatch, conf,
        CpuTimes(user=100, system=20, idle=500, iowait=5, irq=1, softirq=2),
        CpuTimes(user=130, system=30, idle=550, iowait=15, irq=1,
                 softirq=2))
    clock.now += 60
    got = values(plugin)
    assert got == {
        "cpu.frequency": 2400.5,
        "cpu.user.time": 130,
        "cpu.kernel.time": 33,
        "cpu.idle.time": 550,
        "cpu.iowait.time": 15,
        "cpu.user.percent": pytest.approx(30.0),
        "cpu.kernel.percent": pytest.approx(10.0),
        "cpu.idle.percent": pytest.approx(50.0),
        "cpu.iowait.percent": pytest.approx(10.0),
        "cpu.percent": pytest.approx(40.0),
    }
    assert plugin.source == "psutil.cpu"


def test_cpu_percentages_are_not_truncated(monkeypatch, conf, clock,
                                           cpu_freq):
    plugin = make_cpu(monkeypatch, conf, CpuTimes(),
                      CpuTimes(user=37.25, nice=0.5, idle=62.25))
    clock.now += 1
    got = values(plugin)
    assert got["cpu.user.percent"] == pytest.approx(37.25)
    # nice and steal are busy time though neither user nor kernel.
    assert got["cpu.percent"] == pytest.approx(37.75)


def test_cpu_kernel_includes_interrupts(monkeypatch, conf, clock, cpu_freq):
    plugin = make_cpu(monkeypatch, conf, CpuTimes(),
                      CpuTimes(system=10, irq=5, softirq=5, idle=80))
    clock.now += 1
    got = values(plugin)
    assert got["cpu.kernel.time"] == 20
    assert got["cpu.kernel.percent"] == pytest.approx(20.0)
    assert got["cpu.percent"] == pytest.approx(20.0)


def test_cpu_guest_time_is_not_counted_twice(monkeypatch, conf, clock,
                                             cpu_freq):
    # Linux reports guest time inside user as well.
    plugin = make_cpu(monkeypatch, conf, CpuTimes(),
                      CpuTimes(user=60, guest=40, idle=40))
    clock.now += 1
    got = values(plugin)
    assert got["cpu.user.percent"] == pytest.approx(60.0)
    assert got["cpu.percent"] == pytest.approx(60.0)


def test_cpu_later_calls_use_the_previous_sample_as_baseline(
        monkeypatch, conf, clock, cpu_freq):
    plugin = make_cpu(monkeypatch, conf,
                      CpuTimes(), CpuTimes(user=50, idle=50),
                      CpuTimes(user=60, idle=140))
    clock.now += 60
    assert values(plugin)["cpu.percent"] == pytest.approx(50.0)
    clock.now += 60
    assert values(plugin)["cpu.percent"] == pytest.approx(10.0)


def test_cpu_without_elapsed_ticks_reports_no_percentages(
        monkeypatch, conf, clock, cpu_freq):
    plugin = make_cpu(monkeypatch, conf, CpuTimes(user=5, idle=5),
                      CpuTimes(user=5, idle=5))
    clock.now += 60
    got = values(plugin)
    assert not any(name.endswith("percent") for name in got)
    assert got["cpu.user.time"] == 5


def test_cpu_counter_stepping_back_counts_as_zero(monkeypatch, conf, clock,
                                                  cpu_freq):
    # Linux's iowait is known to decrease occasionally.
    plugin = make_cpu(monkeypatch, conf, CpuTimes(iowait=10),
                      CpuTimes(user=25, idle=75, iowait=8))
    clock.now += 1
    got = values(plugin)
    assert got["cpu.iowait.percent"] == 0
    assert got["cpu.percent"] == pytest.approx(25.0)


def test_cpu_without_iowait_field(monkeypatch, conf, clock, cpu_freq):
    plugin = make_cpu(monkeypatch, conf, BareCpuTimes(0, 0, 0, 0),
                      BareCpuTimes(user=20, nice=0, system=5, idle=75))
    clock.now += 1
    got = values(plugin)
    assert got["cpu.iowait.time"] == 0
    assert got["cpu.iowait.percent"] == 0
    assert got["cpu.kernel.time"] == 5
    assert got["cpu.percent"] == pytest.approx(25.0)


@pytest.mark.parametrize("freq", [
    Readings(None),
    Readings(CpuFreq(0.0, 0.0, 0.0)),
    pytest.param(FileNotFoundError, id="raises"),
])
def test_cpu_frequency_left_out_when_unavailable(monkeypatch, conf, clock,
                                                 freq):
    if freq is FileNotFoundError:
        def freq():
            raise FileNotFoundError("/sys/devices/system/cpu/cpufreq")
    monkeypatch.setattr(cpu.psutil, "cpu_freq", freq)
    plugin = make_cpu(monkeypatch, conf, CpuTimes(),
                      CpuTimes(user=1, idle=1))
    got = values(plugin)
    assert "cpu.frequency" not in got
    assert got["cpu.percent"] == pytest.approx(50.0)


# memory


def test_memory(monkeypatch, conf):
    monkeypatch.setattr(memory.psutil, "virtual_memory", Readings(
        VirtualMemory(total=16 << 30, available=10 << 30, percent=37.5,
                      used=5 << 30, free=2 << 30)))
    plugin = memory.MemoryMonitor(conf)
    got = values(plugin)
    assert got == {"memory.total": 16 << 30, "memory.used": 5 << 30,
                   "memory.free": 2 << 30, "memory.available": 10 << 30,
                   "memory.percent": 37.5}
    assert set(got) == plugin.get_metric_names()


# network


def make_network(monkeypatch, conf, *readings):
    counters = Readings(*readings)
    monkeypatch.setattr(network.psutil, "net_io_counters", counters)
    return network.NetworkMonitor(conf), counters


def test_network_rates_summed_over_nics_without_loopback(
        monkeypatch, conf, clock):
    plugin, counters = make_network(
        monkeypatch, conf,
        {"lo": NetIO(0, 0), "eth0": NetIO(1000, 5000),
         "eth1": NetIO(0, 0)},
        {"lo": NetIO(10**9, 10**9), "eth0": NetIO(3000, 9000),
         "eth1": NetIO(2000, 6000)})
    clock.now += 2
    got = values(plugin)
    assert got == {"network.rx.bps": pytest.approx(5000.0),
                   "network.tx.bps": pytest.approx(2000.0)}
    assert counters.calls[-1] == ((), {"pernic": True})
    assert clock.sleeps == []


def test_network_first_short_cycle_waits_for_a_meaningful_window(
        monkeypatch, conf, clock):
    plugin, _ = make_network(monkeypatch, conf, {"eth0": NetIO(0, 0)},
                             {"eth0": NetIO(0, 500)})
    got = values(plugin)
    assert clock.sleeps == [pytest.approx(0.25)]
    assert got["network.rx.bps"] == pytest.approx(2000.0)


def test_network_counter_reset_and_vanished_nic_never_go_negative(
        monkeypatch, conf, clock):
    plugin, _ = make_network(
        monkeypatch, conf,
        {"eth0": NetIO(10**6, 10**6), "eth1": NetIO(100, 100),
         "tap0": NetIO(10**7, 10**7)},
        # eth0 was reset, tap0 disappeared, eth1 moved on normally.
        {"eth0": NetIO(50, 50), "eth1": NetIO(300, 500)})
    clock.now += 1
    got = values(plugin)
    assert got == {"network.rx.bps": pytest.approx(400.0),
                   "network.tx.bps": pytest.approx(200.0)}


def test_network_new_nic_counts_from_its_second_sample(monkeypatch, conf,
                                                       clock):
    plugin, _ = make_network(
        monkeypatch, conf,
        {"eth0": NetIO(0, 0)},
        {"eth0": NetIO(0, 0), "tap1": NetIO(10**9, 10**9)},
        {"eth0": NetIO(0, 0), "tap1": NetIO(10**9 + 100, 10**9 + 200)})
    clock.now += 1
    assert values(plugin)["network.rx.bps"] == 0
    clock.now += 1
    got = values(plugin)
    assert got["network.rx.bps"] == pytest.approx(200.0)
    assert got["network.tx.bps"] == pytest.approx(100.0)


# All plugins for real, loaded the way the agent loads them


def test_builtin_plugins_measure_this_machine(conf, metrics_file):
    write(metrics_file, {"file.test": 1.5})
    names = ["cpu", "memory", "network", "disk", "file"]
    plugins = {name: driver.DriverManager(
        "compute_monitor.monitors", name, invoke_on_load=True,
        invoke_args=(conf,)).driver for name in names}
    results = {}
    # Only the first delta plugin has to wait for the minimum window; the
    # others' baselines are old enough by then.
    for name, plugin in plugins.items():
        assert isinstance(plugin, base.ResourceMonitorPluginBase)
        results[name] = plugin.get_metrics()
    for name, entries in results.items():
        plugin = plugins[name]
        assert entries, name
        for entry in entries:
            assert entry["name"] in plugin.get_metric_names(), entry
            assert base.METRIC_NAME_RE.match(entry["name"]), entry
            value = entry["value"]
            assert isinstance(value, int | float), entry
            assert not isinstance(value, bool), entry
            assert math.isfinite(value), entry
    got = {name: {e["name"] for e in entries}
           for name, entries in results.items()}
    assert "cpu.percent" in got["cpu"]
    assert got["memory"] == plugins["memory"].get_metric_names()
    assert got["network"] == {"network.rx.bps", "network.tx.bps"}
    assert {"disk.total", "disk.percent"} <= got["disk"]
    if psutil.disk_io_counters() is not None:
        assert "disk.iops" in got["disk"]
    assert got["file"] == {"file.test"}
