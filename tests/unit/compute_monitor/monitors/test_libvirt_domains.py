"""The libvirt monitor against libvirt's own test driver (no hypervisor):
``test:///default`` and a test-driver node file of several domains."""

import sys

import pytest

from compute_monitor import agent as agent_mod
from compute_monitor.monitors import libvirt_domains
from scheduler import exception
from tests.libvirt_support import require_libvirt

GIB = 1024 ** 3
DEFAULT_DOMAIN = "6695eb01-f6a4-8304-79aa-97f2502e193f"
SMALL = "11111111-1111-4111-8111-111111111111"
BIG = "22222222-2222-4222-8222-222222222222"
OFF = "33333333-3333-4333-8333-333333333333"

#: A node of 16 CPUs and 64 GiB with two running domains and one shut
#: off (test:runstate 5), in libvirt's test driver format.
NODE_XML = f"""\
<node xmlns:test="http://libvirt.org/schemas/domain/test/1.0">
  <cpu><mhz>2400</mhz><nodes>1</nodes><sockets>1</sockets>
    <cores>8</cores><threads>2</threads></cpu>
  <memory>67108864</memory>
  <domain type="test"><name>small</name><uuid>{SMALL}</uuid>
    <memory unit="MiB">2048</memory>
    <currentMemory unit="MiB">1024</currentMemory>
    <vcpu>1</vcpu><os><type>hvm</type></os></domain>
  <domain type="test"><name>big</name><uuid>{BIG}</uuid>
    <memory unit="GiB">16</memory>
    <vcpu>8</vcpu><os><type>hvm</type></os></domain>
  <domain type="test"><name>off</name><uuid>{OFF}</uuid>
    <memory unit="GiB">4</memory>
    <vcpu>2</vcpu><os><type>hvm</type></os>
    <test:runstate>5</test:runstate></domain>
</node>
"""


@pytest.fixture(autouse=True)
def libvirt_installed(request):
    # The missing-module test needs no libvirt.
    if request.node.name != "test_missing_libvirt_python_is_a_start_up_error":
        require_libvirt()


def monitor_for(conf, uri: str) -> libvirt_domains.LibvirtMonitor:
    conf.set_override("libvirt_uri", uri, group="compute_monitor")
    conf.set_override("monitors", ["libvirt"], group="compute_monitor")
    (name, monitor), = agent_mod.load_monitors(conf)
    assert name == "libvirt"
    return monitor


def by_instance(entries: list[dict]) -> dict[str | None, dict[str, float]]:
    found: dict[str | None, dict[str, float]] = {}
    for entry in entries:
        found.setdefault(entry.get("instance"), {})[entry["name"]] = \
            entry["value"]
    return found


@pytest.fixture
def node_file(tmp_path):
    path = tmp_path / "node.xml"
    path.write_text(NODE_XML)
    return path


def test_default_test_driver(monitor_config):
    monitor = monitor_for(monitor_config, "test:///default")
    entries = monitor.get_metrics()
    found = by_instance(entries)
    assert set(found) == {DEFAULT_DOMAIN, None}
    domain = found[DEFAULT_DOMAIN]
    assert set(domain) == {"instance.cpu.percent", "instance.memory.used"}
    # The test driver's balloon statistics: 2 GiB available, 1 GiB unused.
    assert domain["instance.memory.used"] == 1 * GIB
    assert domain["instance.cpu.percent"] >= 0
    node = found[None]
    assert node["hypervisor.instances"] == 1
    assert node["hypervisor.vcpus.used"] == 2
    assert node["hypervisor.memory.total"] == 3 * GIB
    assert set(node) <= monitor.get_metric_names()
    assert {e["source"] for e in entries} == {"libvirt"}


def test_node_file_with_several_domains(monitor_config, node_file):
    monitor = monitor_for(monitor_config, f"test://{node_file}")
    found = by_instance(monitor.get_metrics())
    # The domain shut off reports nothing.
    assert set(found) == {SMALL, BIG, None}
    # No balloon statistics in a node file: the memory each holds.
    assert found[SMALL]["instance.memory.used"] == 1 * GIB
    assert found[BIG]["instance.memory.used"] == 16 * GIB
    # The test driver runs every domain's CPU clock at wall-clock speed:
    # one busy CPU each, 100% of one vCPU, 12.5% of eight.
    assert found[SMALL]["instance.cpu.percent"] > \
        found[BIG]["instance.cpu.percent"] > 0
    assert found[None] | {"hypervisor.memory.free": 0} == {
        "hypervisor.instances": 2, "hypervisor.vcpus.used": 9,
        "hypervisor.memory.allocated": 17 * GIB,
        "hypervisor.memory.total": 64 * GIB,
        "hypervisor.memory.free": 0}


def test_agent_keeps_every_instance_entry(monitor_config, node_file):
    agent = agent_mod.MonitorAgent(
        monitor_config, [("libvirt", monitor_for(monitor_config,
                                                 f"test://{node_file}"))])
    collected = agent.collect()
    instances = {(e["name"], e.get("instance")) for e in collected}
    assert {("instance.cpu.percent", SMALL), ("instance.cpu.percent", BIG),
            ("instance.memory.used", SMALL),
            ("instance.memory.used", BIG)} <= instances
    # A second cycle measures over the time since the first.
    assert {e.get("instance") for e in agent.collect()} == {SMALL, BIG,
                                                             None}


def test_unreachable_hypervisor_fails_a_cycle_not_the_agent(
        monitor_config, tmp_path, caplog):
    path = tmp_path / "later.xml"
    monitor = monitor_for(monitor_config, f"test://{path}")
    agent = agent_mod.MonitorAgent(monitor_config, [("libvirt", monitor)])
    assert agent.collect() == []
    assert "Monitor libvirt failed: libvirtError" in caplog.text
    # Reconnected on the next cycle once the hypervisor is there.
    path.write_text(NODE_XML)
    assert {e.get("instance") for e in agent.collect()} == {SMALL, BIG,
                                                             None}


def test_missing_libvirt_python_is_a_start_up_error(monitor_config,
                                                    monkeypatch):
    # None in sys.modules makes "import libvirt" raise ImportError.
    monkeypatch.setitem(sys.modules, "libvirt", None)
    monitor_config.set_override("monitors", ["cpu", "libvirt"],
                                group="compute_monitor")
    with pytest.raises(exception.ConfigError) as caught:
        agent_mod.load_monitors(monitor_config)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        "invalid value 'libvirt' for [compute_monitor] monitors: ")
    assert "libvirt-python is not installed" in message
    assert "pip install libvirt-python" in message
