"""Helpers shared by the monitor tests."""

import json

from compute_monitor import base


def values(plugin: base.ResourceMonitorPluginBase) -> dict:
    """get_metrics() as {name: value}, checking the entries' shape."""
    entries = plugin.get_metrics()
    names = [entry["name"] for entry in entries]
    assert len(names) == len(set(names)), names
    assert set(names) <= plugin.get_metric_names()
    for entry in entries:
        assert entry["source"] == plugin.source
        assert entry["timestamp"].endswith("Z")
    # One timestamp per sample.
    assert len({entry["timestamp"] for entry in entries}) <= 1
    return {entry["name"]: entry["value"] for entry in entries}


def write(path, data) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(data if isinstance(data, str) else json.dumps(data))
