"""Instance entries in a column of their own (schema revision 0007): read
when first used, beside those an older agent keeps in the metrics list."""

import json
import logging

import pytest

from scheduler.db import models
from scheduler.db.host_queries import NodeRow
from scheduler.hosts.cache import decode
from tests.unit.hosts.cache.fakes import SECOND
from tests.unit.hosts.cache.fakes import add_node
from tests.unit.hosts.cache.fakes import update_node

STAMP = "2026-01-05T12:00:00.5Z"
HOST = [{"name": "cpu.percent", "value": 12.5, "timestamp": STAMP}]


def of(instance: str, value: float, name="instance.cpu.percent") -> dict:
    return {"name": name, "instance": instance, "value": value,
            "timestamp": STAMP}


def _row(metrics: list[dict], own: list[dict] | str | None) -> NodeRow:
    fields = dict.fromkeys(NodeRow._fields)
    fields.update(id=1, uuid="u", host="h", hypervisor_hostname="h",
                  vcpus=16, memory_mb=1024, local_gb=10, cpu_info="{}",
                  networks="[]", metrics=json.dumps(metrics),
                  instance_metrics=own if own is None or isinstance(own, str)
                  else json.dumps(own))
    return NodeRow(**fields)


def test_the_column_is_read_when_first_used_not_with_the_report(
        count_json):
    row = _row(HOST, [of("vm-a", 90.0), of("vm-b", 10.0)])
    got = decode.decode(row)
    # The report's parse read the host's metrics, not the column.
    assert json.dumps(HOST) in count_json
    assert row.instance_metrics not in count_json
    assert got.metrics["cpu.percent"].value == 12.5
    assert set(got.instance_metrics) == {"vm-a", "vm-b"}
    assert got.instance_metrics["vm-a"]["instance.cpu.percent"].value == 90.0
    assert count_json.count(row.instance_metrics) == 1


@pytest.mark.parametrize("window", [0.0, 3600.0])
def test_a_metrics_list_holding_instance_entries_is_read_alone(window):
    # The format of an agent older than schema revision 0007, which wrote
    # the row last: a column another writer left is not read.
    got = decode.decode(_row(HOST + [of("vm-a", 5.0)], [of("vm-b", 10.0)]),
                        None, 0.0, window)
    assert set(got.instance_metrics) == {"vm-a"}
    if window:
        assert got.instance_history.names() == ["vm-a"]


def test_no_column_and_no_entries_make_no_object():
    assert decode.decode(_row(HOST, None)).instance_metrics is (
        decode._NO_INSTANCES)


@pytest.mark.parametrize("own, problem, kept", [
    ("{not json", "instance_metrics is not JSON", set()),
    ("null", "instance_metrics hold a NoneType, not a list", set()),
    ('{"vm-a": 1}', "instance_metrics hold a dict, not a list", set()),
    ('[1, {"name": "instance.cpu.percent", "instance": "vm-a", '
     f'"value": 3, "timestamp": "{STAMP}"}}]', "entries that are not objects",
     {"vm-a"}),
])
@pytest.mark.parametrize("window", [0.0, 3600.0])
def test_a_malformed_column_is_logged_and_the_host_kept(caplog, own,
                                                        problem, kept,
                                                        window):
    # With an instance history, the column is decoded with the report.
    with caplog.at_level(logging.WARNING):
        got = decode.decode(_row(HOST, own), None, 0.0, window)
        held = dict(got.instance_metrics)
    assert got.metrics["cpu.percent"].value == 12.5
    assert problem in caplog.text
    assert set(held) == kept
    if window:
        assert set(got.instance_history.names()) == kept


def test_the_instance_history_reads_the_column_with_each_report():
    first = decode.decode(_row(HOST, [of("vm-a", 30.0)]), None, 0.0, 3600.0)
    later = [{**entry, "timestamp": "2026-01-05T12:01:00.5Z"}
             for entry in [of("vm-a", 90.0)]]
    got = decode.decode(_row(HOST, later), first, 0.0, 3600.0)
    assert got.instance_history.statistic("vm-a", "mean", 3600.0) == 60.0


def test_an_irregular_entry_of_the_column_is_left_out_of_the_history(
        caplog):
    own = [of("vm-a", 30.0), of("vm-a", 50.0)]
    with caplog.at_level(logging.WARNING):
        got = decode.decode(_row(HOST, own), None, 0.0, 3600.0)
    assert got.instance_history.statistic("vm-a", "mean", 3600.0) == 30.0
    assert "vm-a: instance.cpu.percent is reported twice" in caplog.text


def test_the_key_covers_the_column():
    row = _row(HOST, [of("vm-a", 30.0)])
    assert decode.decode(row).instances_key == decode.metrics_key(
        row.instance_metrics)
    assert decode.decode(_row(HOST, None)).instances_key is None


def test_full_load_sees_the_column_written_without_moving_the_key(
        conf, engine, manager, clock):
    conf.set_override("full_refresh_interval", 60, group="filter_scheduler")
    when = models.utcnow() - 120 * SECOND
    node = add_node(engine, "a", when=when,
                    instance_metrics=json.dumps([of("vm-a", 30.0)]))
    host = manager.host_states()[0]
    assert host.instance_metrics["vm-a"]["instance.cpu.percent"].value == 30
    update_node(engine, node, instance_metrics=json.dumps([of("vm-a", 70.0)]),
                changed_at=when)
    clock.now += 60
    again = manager.host_states()[0]
    assert manager.last_refresh.full and manager.last_refresh.rows_decoded
    assert again.instance_metrics["vm-a"]["instance.cpu.percent"].value == 70
    # Unchanged, the next full load keeps it as it is.
    clock.now += 60
    assert manager.host_states()[0] is again
    assert manager.last_refresh.full and not manager.last_refresh.rows_decoded
