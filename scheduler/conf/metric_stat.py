"""Windowed statistics of a metric: ``<metric>:<stat>:<window>``
(docs/operator-guide.md, "Load-aware weighing").

Parsed wherever a metric name is accepted (``[metrics] weight_setting``,
``resources:`` extra specs, policy units); the host states compute them
(``scheduler.hosts.history``). Here, in the configuration room, so that
the option types and the request parser share one grammar.
"""

import functools
import math
import re
from typing import NamedTuple

from compute_monitor.base import METRIC_NAME_RE

LAST = "last"
STDDEV = "stddev"
STATS = (LAST, "mean", "max", "p95", STDDEV)
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smh]?)")
EXPECTED = ("<metric>, <metric>:last or <metric>:<stat>:<window>, stat "
            f"one of {', '.join(STATS)}, window a duration such as 90s, "
            "30m or 1h")


class MetricStat(NamedTuple):
    """One parsed metric reference."""

    metric: str
    stat: str = LAST
    #: Seconds; 0 for ``last``.
    window: float = 0.0


def parse_duration(text: str) -> float:
    """Seconds of ``90s``, ``30m``, ``1h`` or a plain number of seconds;
    ValueError naming the text otherwise."""
    match = _DURATION_RE.fullmatch(str(text).strip())
    if match is None:
        raise ValueError(f"window {text!r} is not a duration (expected a "
                         "number with s, m or h, e.g. 30m)")
    seconds = float(match[1]) * _UNITS[match[2] or "s"]
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"window {text!r} is not a positive duration")
    return seconds


@functools.lru_cache(maxsize=1024)
def parse(name: str) -> MetricStat:
    """The metric, statistic and window of ``name``; ValueError naming
    what is wrong. ``cpu.percent`` is ``cpu.percent:last``."""
    parts = str(name).split(":")
    if not METRIC_NAME_RE.match(parts[0]):
        raise ValueError(f"{parts[0]!r} is not a dotted lower-case "
                         f"metric name (expected {EXPECTED})")
    if len(parts) == 1 or parts[1:] == [LAST]:
        return MetricStat(parts[0])
    if len(parts) != 3:
        raise ValueError(f"{name!r} is not {EXPECTED}")
    metric, stat, window = parts
    if stat not in STATS:
        raise ValueError(f"unknown statistic {stat!r} in {name!r} "
                         f"(expected one of {', '.join(STATS)})")
    return MetricStat(metric, stat, parse_duration(window))


def base_metric(name: str) -> str:
    """The reported metric a reference reads: ``cpu.percent`` of
    ``cpu.percent:p95:1h``."""
    return name.partition(":")[0]


def format_duration(seconds: float) -> str:
    for unit in ("h", "m"):
        if seconds >= _UNITS[unit] and seconds % _UNITS[unit] == 0:
            return f"{seconds / _UNITS[unit]:g}{unit}"
    return f"{seconds:g}s"
