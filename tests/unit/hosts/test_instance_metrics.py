"""Instance entries of a node's metrics (docs/operator-guide.md): decoded apart
from the host's metrics, mapped to claims by instance uuid, aged."""

import datetime
import json
import logging
import threading
import time
import uuid

import pytest

from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.hosts import instance_metrics as im
from scheduler.hosts import state as hm
from scheduler.hosts.cache.manager import HostManager

NODES = models.ComputeNode.__table__
ALLOCATIONS = models.Allocation.__table__
T0 = datetime.datetime(2026, 11, 21, 12, 0)
SECOND = datetime.timedelta(seconds=1)


def iso(moment: datetime.datetime) -> str:
    return moment.isoformat(timespec="microseconds") + "Z"


def entry(name: str, value, when=T0, instance: str | None = None) -> dict:
    found = {"name": name, "value": value, "timestamp": iso(when),
             "source": "test"}
    if instance is not None:
        found["instance"] = instance
    return found


def add_node(engine, metrics: list, claims: tuple[str, ...] = ()) -> int:
    with engine.begin() as connection:
        node = connection.execute(NODES.insert().values(
            uuid=str(uuid.uuid4()), host="h1", hypervisor_hostname="h1",
            vcpus=8, memory_mb=16384, local_gb=100, memory_mb_used=0,
            local_gb_used=0, cpu_info="{}", networks="[]",
            metrics=json.dumps(metrics), metrics_updated_at=T0,
            disabled=False, generation=0, changed_at=T0, created_at=T0,
            updated_at=T0)).inserted_primary_key[0]
        for instance in claims:
            connection.execute(ALLOCATIONS.insert().values(
                uuid=str(uuid.uuid4()), instance_uuid=instance,
                compute_node_id=node, vcpus=2, memory_mb=1024, disk_gb=1,
                created_at=T0 - 60 * SECOND))
    return node


@pytest.fixture
def host_of(scheduler_config):
    def read(metrics: list, claims: tuple[str, ...] = ()) -> hm.HostState:
        add_node(db_api.get_engine(scheduler_config), metrics, claims)
        host, = HostManager(scheduler_config).host_states()
        return host
    return read


def test_instance_entries_are_kept_apart_from_host_metrics(host_of):
    host = host_of([
        entry("cpu.percent", 40.0),
        entry("instance.cpu.percent", 90.0, instance="vm-a"),
        entry("instance.memory.used", 2 ** 30, instance="vm-a"),
        entry("instance.cpu.percent", 5.0, instance="vm-b"),
    ], claims=("vm-a", "vm-b"))
    # Host filters and weighers read host.metrics: no instance entry there,
    # and the host's own cpu.percent is not shadowed by an instance's.
    assert set(host.metrics) == {"cpu.percent"}
    assert host.metric_since("cpu.percent", None) == 40.0
    assert host.metric_since("instance.cpu.percent", None) is None
    assert {uuid: set(values) for uuid, values
            in host.instance_metrics.items()} == {
        "vm-a": {"instance.cpu.percent", "instance.memory.used"},
        "vm-b": {"instance.cpu.percent"}}
    assert im.instance_metric(host, "vm-a", im.CPU_PERCENT, None) == 90.0
    assert im.instance_metric(host, "vm-a", im.MEMORY_USED, None) == 2 ** 30
    assert im.instance_metric(host, "vm-b", im.CPU_PERCENT, None) == 5.0
    assert im.instance_metric(host, "vm-b", im.MEMORY_USED, None) is None


def test_unknown_instances_are_unavailable(host_of):
    # vm-x runs on the node but the scheduler holds no claim of it there
    # (started behind its back, or already moved away).
    host = host_of([entry("instance.cpu.percent", 90.0, instance="vm-x"),
                    entry("instance.cpu.percent", 10.0, instance="vm-a")],
                   claims=("vm-a",))
    assert im.instance_metric(host, "vm-x", im.CPU_PERCENT, None) is None
    assert im.instance_metric(host, "vm-a", im.CPU_PERCENT, None) == 10.0
    assert im.instance_metric(host, "vm-b", im.CPU_PERCENT, None) is None


@pytest.mark.parametrize("age, available", [
    (0, True), (59, True), (60, True), (61, False), (3600, False)])
def test_stale_entries_are_unavailable(host_of, age, available):
    host = host_of([entry("instance.cpu.percent", 70.0, instance="vm-a")],
                   claims=("vm-a",))
    now = T0 + age * SECOND
    value = im.instance_metric(host, "vm-a", im.CPU_PERCENT,
                               hm.stale_before(now, 60))
    assert value == (70.0 if available else None)
    # max_age <= 0 disables the age check, as for host metrics.
    assert im.instance_metric(host, "vm-a", im.CPU_PERCENT,
                              hm.stale_before(now, 0)) == 70.0


def test_malformed_instance_entries_are_dropped_and_logged(host_of,
                                                           caplog):
    entries = [
        entry("instance.cpu.percent", 50.0, instance="vm-a"),
        entry("instance.cpu.percent", 60.0, instance="vm-a"),  # twice
        entry("instance.memory.used", "lots", instance="vm-a"),
        entry("instance.cpu.percent", 1.0, instance=""),
        entry("cpu.percent", 1.0, instance="vm-b"),  # not instance.*
        {"name": "instance.cpu.percent", "value": 3, "instance": "vm-c",
         "timestamp": "yesterday"},
        {"name": "instance.cpu.percent", "value": 3, "instance": 7,
         "timestamp": iso(T0)},
        entry("memory.free", 10.0),
    ]
    with caplog.at_level(logging.WARNING):
        host = host_of(entries, claims=("vm-a", "vm-b", "vm-c"))
    assert host.metric_since("memory.free", None) == 10.0
    assert {uuid: {name: m.value for name, m in values.items()}
            for uuid, values in host.instance_metrics.items()} == {
        "vm-a": {"instance.cpu.percent": 50.0}}
    message, = [r.getMessage() for r in caplog.records
                if r.levelno == logging.WARNING and r.name == im.__name__]
    for text in ("instance vm-a: instance.cpu.percent is reported twice",
                 "instance vm-a: instance.memory.used value 'lots'",
                 "names no instance",
                 "entry name 'cpu.percent' does not begin with 'instance.'",
                 "instance vm-c: instance.cpu.percent timestamp "
                 "'yesterday'"):
        assert text in message


def test_snapshots_share_the_instance_entries(host_of):
    host = host_of([entry("instance.cpu.percent", 20.0, instance="vm-a")],
                   claims=("vm-a",))
    copy, = hm.snapshot([host])
    copy.consume(1, 128, 1, "vm-new")
    assert im.instance_metric(copy, "vm-a", im.CPU_PERCENT, None) == 20.0
    assert "vm-new" not in host.instances


def test_on_first_use_of_a_column_text_reads_it_once_then_lets_it_go():
    """The form a report's own instance column takes (no reader object
    per report): the reader gets the text and the node, once, and the
    text is not kept once decoded."""
    calls = []
    text = json.dumps([entry(im.CPU_PERCENT, 40.0, instance="vm-1")])

    def read(column: str, node: str) -> list[dict]:
        calls.append((column, node))
        return json.loads(column)

    found = im.OnFirstUse(read, "node-1", text)
    assert calls == []
    assert found["vm-1"][im.CPU_PERCENT].value == 40.0
    assert dict(found) == {"vm-1": found["vm-1"]} and len(found) == 1
    assert calls == [(text, "node-1")]
    assert found._text is None and found._entries is list


def test_threads_reading_one_report_at_once_decode_it_once():
    """A cached host state is shared by every request thread: the first
    readers race, one decodes, all see the same entries."""
    calls = []
    started = threading.Barrier(8)
    text = json.dumps([entry(im.CPU_PERCENT, 40.0, instance="vm-1")])

    def read(column: str, node: str) -> list[dict]:
        calls.append(node)
        # The others meanwhile find nothing decoded and wait for the
        # decoding under way.
        time.sleep(0.05)
        return json.loads(column)

    found = im.OnFirstUse(read, "node-1", text)
    seen = []

    def reader() -> None:
        started.wait()
        seen.append(found["vm-1"][im.CPU_PERCENT].value)

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [40.0] * 8 and calls == ["node-1"]


def test_a_reader_that_fails_is_asked_again_on_the_next_read():
    """Nothing is cached from a failed read: the next one reads the
    text again rather than answering with no entries."""
    text = json.dumps([entry(im.CPU_PERCENT, 40.0, instance="vm-1")])
    answers = [OSError("transient"), json.loads(text)]

    def read(column: str, node: str) -> list[dict]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    found = im.OnFirstUse(read, "node-1", text)
    with pytest.raises(OSError):
        len(found)
    assert found["vm-1"][im.CPU_PERCENT].value == 40.0 and answers == []
