"""A report's instance entries, as the host cache reads them.

A node's agent writes them to ``compute_nodes.instance_metrics`` (schema
revision 0007), apart from the host's own metrics, so that a refresh
parses only the host's: on a busy node the instance entries outnumber
them, and only balancers read them. Rows an older agent wrote hold them
in ``metrics``; a row whose metrics list holds instance entries is read
in that format alone (``on_first_use``'s callers). Either way they reach
``HostState.instance_metrics`` decoded when first read
(``instance_metrics.OnFirstUse``), or with every report while
``[metrics] instance_history_window`` keeps their history.
"""

import functools
import json
import sys
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence

import msgspec
import orjson

from scheduler.common.abridge import short
from scheduler.hosts import history as history_mod
from scheduler.hosts import instance_metrics as instance_metrics_mod
from scheduler.hosts.metric_entries import cached_timestamp
from scheduler.hosts.metric_entries import recent_stamps
from scheduler.hosts.state import Metric
from scheduler.hosts.table import epoch

# The warnings of instance entries, wherever they are stored, under one
# logger name.
LOG = instance_metrics_mod.LOG

_LARGEST = sys.float_info.max
_INSTANCE_CPU = instance_metrics_mod.CPU_PERCENT


def load_json(text: str, column: str, problems: list[str]) -> object:
    """The JSON value of ``column``'s ``text`` (any of a row's JSON
    columns), or None with what is wrong in ``problems``."""
    try:
        # orjson parses a report in a third of the standard library's
        # time; what it refuses (NaN literals, integers past 64 bits) the
        # standard library reads as before, so that only the bad values
        # are lost, not the row.
        return orjson.loads(text)
    except (TypeError, ValueError, orjson.JSONDecodeError):
        pass
    try:
        # Looked up at call time, so that tests can count the calls.
        return json.loads(text)
    except (TypeError, ValueError, RecursionError) as e:
        problems.append(f"{column} is not JSON ({short(text)}: {e})")
        return None


def instance_entries(text: str) -> list[dict]:
    """The instance entries of a metrics list (read again when first
    used)."""
    entries = load_json(text, "metrics", [])
    if not isinstance(entries, list):
        return []
    return [entry for entry in entries
            if type(entry) is dict and "instance" in entry]


def column_entries(text: str, node: str) -> list[dict]:
    """The entries of an ``instance_metrics`` column; what is not an
    entry is left out and logged."""
    problems: list[str] = []
    entries = load_json(text, "instance_metrics", problems)
    if not isinstance(entries, list) and not problems:
        problems.append(f"instance_metrics hold a {type(entries).__name__},"
                        " not a list")
    found = ([entry for entry in entries if type(entry) is dict]
             if isinstance(entries, list) else [])
    if isinstance(entries, list) and len(found) < len(entries):
        problems.append("instance_metrics hold entries that are not "
                        "objects: " + short([entry for entry in entries
                                             if type(entry) is not dict]))
    if problems:
        LOG.warning("Compute node %s reports malformed instance entries; "
                    "they are left out: %s", node, "; ".join(problems))
    return found


def on_first_use(node: str, own: str | None, in_metrics: str | None = None,
                 found: Sequence[dict] = ()
                 ) -> Callable[[], list[dict]] | None:
    """What ``OnFirstUse`` reads the instance entries of a report from:
    those already ``found``, those of the metrics list ``in_metrics``
    (when it holds some) and those of the row's own column ``own``; None
    when there are none."""
    if own is None and in_metrics is None and not found:
        return None
    return functools.partial(_gathered, node, own, in_metrics, found)


def _gathered(node: str, own: str | None, in_metrics: str | None,
              found: Sequence[dict]) -> list[dict]:
    entries = list(found)
    if in_metrics is not None:
        entries += instance_entries(in_metrics)
    if own is not None:
        entries += column_entries(own, node)
    return entries


def cpu_readings(entries: Sequence) -> dict[str, tuple[float, float]] | None:
    """``(epoch seconds, value)`` of each instance's instance.cpu.percent
    entry among a report's instance ``entries`` (parsed structs), or None
    when one of them is irregular (no instance uuid, a name outside
    ``instance.``, twice the same, a bad time or number): the instance
    entries' own decoding then leaves it out and logs it, as for every
    report."""
    stamps = recent_stamps()
    readings: dict[str, tuple[float, float]] = {}
    seen: set[tuple[str, str]] = set()
    for entry in entries:
        instance, name, value = entry.instance, entry.name, entry.value
        timestamp = cached_timestamp(entry.timestamp, stamps)
        if (type(instance) is not str or not instance
                or not name.startswith(instance_metrics_mod.PREFIX)
                or (instance, name) in seen or timestamp is None
                or not -_LARGEST <= value <= _LARGEST):
            return None
        seen.add((instance, name))
        if name == _INSTANCE_CPU:
            readings[instance] = (epoch(timestamp), float(value))
    return readings


def as_dicts(entries: Sequence) -> list[dict]:
    """Parsed instance entries as the entry-by-entry decoding takes
    them."""
    return [{"name": entry.name, "value": entry.value,
             "timestamp": entry.timestamp, "source": entry.source}
            | ({} if entry.instance is msgspec.UNSET
               else {"instance": entry.instance}) for entry in entries]


def instance_history(held: history_mod.MetricHistory,
                     instances: Mapping[str, Mapping[str, Metric]],
                     readings: dict[str, tuple[float, float]] | None,
                     window: float) -> history_mod.MetricHistory:
    """The instances' instance.cpu.percent history ``held`` with this
    report's added; instances the report no longer measures are
    dropped. ``readings``: the report's, read straight from its entries
    when they are regular (``cpu_readings``), else None: taken from
    ``instances``, the decoded entries."""
    if window <= 0:
        return history_mod.EMPTY
    if readings is None:
        cpu = _INSTANCE_CPU
        return held.appended({uuid: metrics[cpu] for uuid, metrics
                              in instances.items() if cpu in metrics}, window)
    return held.appended_readings(readings, window)
