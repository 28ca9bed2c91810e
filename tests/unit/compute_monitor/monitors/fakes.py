"""Helpers shared by the monitor tests."""

import collections
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


DiskIO = collections.namedtuple(
    "DiskIO", "read_count write_count read_bytes write_bytes")


DiskUsage = collections.namedtuple("DiskUsage", "total used free percent")


class Readings:
    """A psutil function returning the given readings in turn."""

    def __init__(self, *readings) -> None:
        self.readings = list(readings)
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        reading = self.readings.pop(0)
        if isinstance(reading, Exception):
            raise reading
        return reading


class FakeClock:
    """Stands in for the time module inside _delta: sleeping only moves
    the clock, so the tests never wait."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
