"""compute_monitor.monitors.file: the file monitor."""

import logging

import pytest

from compute_monitor.monitors import file
from tests.fakes import exceptions_at_warnings
from tests.unit.compute_monitor.monitors.fakes import values
from tests.unit.compute_monitor.monitors.fakes import write

# file


def file_warnings(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == file.__name__
            and record.levelno == logging.WARNING]


def test_file_object_form(conf, metrics_file):
    write(metrics_file, {"gpu.count": 4, "rack.power.watts": 512.5})
    plugin = file.FileMonitor(conf)
    assert plugin.get_metric_names() == set()
    assert values(plugin) == {"gpu.count": 4, "rack.power.watts": 512.5}
    assert plugin.get_metric_names() == {"gpu.count", "rack.power.watts"}
    assert plugin.source == "file:" + metrics_file


def test_file_list_form(conf, metrics_file):
    write(metrics_file, [
        {"name": "gpu.count", "value": 2},
        {"name": "temp.inlet", "value": 21.5,
         "timestamp": "2024-05-01T10:00:00Z"}])
    plugin = file.FileMonitor(conf)
    entries = plugin.get_metrics()
    assert [(e["name"], e["value"]) for e in entries] == [
        ("gpu.count", 2), ("temp.inlet", 21.5)]
    assert entries[0]["timestamp"].endswith("Z")
    assert entries[0]["timestamp"] != "2024-05-01T10:00:00Z"
    assert entries[1]["timestamp"] == "2024-05-01T10:00:00Z"
    assert {e["source"] for e in entries} == {"file:" + metrics_file}
    assert plugin.get_metric_names() == {"gpu.count", "temp.inlet"}


def test_file_missing_logs_one_warning(conf, metrics_file, caplog):
    plugin = file.FileMonitor(conf)
    with caplog.at_level(logging.WARNING):
        assert plugin.get_metrics() == []
    warnings = file_warnings(caplog)
    # The reason once: not the path again, as str(OSError) has it.
    assert warnings == [f"File monitor: cannot read metrics file "
                        f"{metrics_file}: No such file or directory"]


@pytest.mark.parametrize("content, problem", [
    ("{not json", "Expecting property name"),
    ("", "Expecting value"),
    ('"just a string"', "str"),
    ("42", "int"),
    ("null", "NoneType"),
])
def test_file_malformed_logs_a_warning(conf, metrics_file, caplog, content,
                                       problem):
    write(metrics_file, content)
    plugin = file.FileMonitor(conf)
    with caplog.at_level(logging.WARNING), \
            exceptions_at_warnings(file.LOG.logger.name) as exceptions:
        assert plugin.get_metrics() == []
    assert exceptions == [None]
    warnings = file_warnings(caplog)
    assert metrics_file in warnings[0]
    assert problem in warnings[0]


def test_file_not_utf8_logs_a_warning(conf, metrics_file, caplog):
    with open(metrics_file, "wb") as f:
        f.write(b'{"a": 1, "\xff": 2}')
    with caplog.at_level(logging.WARNING):
        assert file.FileMonitor(conf).get_metrics() == []
    assert len(file_warnings(caplog)) == 1


def test_file_is_read_again_on_every_call(conf, metrics_file, caplog):
    plugin = file.FileMonitor(conf)
    write(metrics_file, {"a.one": 1})
    assert values(plugin) == {"a.one": 1}
    write(metrics_file, [{"name": "b.two", "value": 2.5}])
    assert values(plugin) == {"b.two": 2.5}
    assert plugin.get_metric_names() == {"b.two"}
    write(metrics_file, "[broken")
    with caplog.at_level(logging.WARNING):
        assert plugin.get_metrics() == []
    # Names of the last successful read survive a failed one.
    assert plugin.get_metric_names() == {"b.two"}
    write(metrics_file, {})
    assert plugin.get_metrics() == []
    assert plugin.get_metric_names() == set()


def test_file_passes_bad_entries_through_without_crashing(conf,
                                                          metrics_file):
    write(metrics_file, [
        {"name": "ok.metric", "value": 1},
        {"name": 7, "value": 1},
        {"name": ["un", "hashable"], "value": 1},
        {"name": "flag", "value": True},
        {"name": "text", "value": "high"},
        {"name": "no.value"},
        "not an object",
        None,
    ])
    plugin = file.FileMonitor(conf)
    entries = plugin.get_metrics()
    assert len(entries) == 8
    assert entries[1]["name"] == 7
    assert entries[3]["value"] is True
    assert entries[5] == {"name": "no.value"}
    assert entries[6:] == ["not an object", None]
    assert plugin.get_metric_names() == {"ok.metric", "flag", "text",
                                         "no.value"}

    write(metrics_file, {"bool.value": False, "obj.value": {"x": 1}})
    assert values(plugin) == {"bool.value": False, "obj.value": {"x": 1}}


def test_file_follows_a_changed_file_path(conf, tmp_path):
    other = str(tmp_path / "other.json")
    write(other, {"x": 1})
    plugin = file.FileMonitor(conf)
    conf.set_override("file_path", other, group="compute_monitor")
    assert values(plugin) == {"x": 1}
    assert plugin.source == "file:" + other
