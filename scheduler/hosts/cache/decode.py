"""Decoding a ``compute_nodes`` row's JSON columns (metrics, cpu_info,
networks; the instance entries through ``instance_entries``) for the
host cache: what is malformed is left out and logged,
and the node is scheduled on for what remains (docs/operator-guide.md)."""

import datetime
import functools
import types
from array import array
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import NamedTuple

import msgspec
from oslo_log import log as logging

from scheduler.common.abridge import short
from scheduler.db.host_queries import NodeRow
from scheduler.hosts import history as history_mod
from scheduler.hosts import history_block
from scheduler.hosts import instance_metrics as instance_metrics_mod
from scheduler.hosts.cache import instance_entries
from scheduler.hosts.cache import report_columns
from scheduler.hosts.cache.instance_entries import load_json
from scheduler.hosts.metric_entries import reading
from scheduler.hosts.metric_entries import recent_stamps
from scheduler.hosts.state import Metric
from scheduler.hosts.table import epoch

# The host cache's warnings keep the logger name they have always had:
# operators' log filters know them by it.
LOG = logging.getLogger(__name__)


# Tuples, not dataclasses: one of each is made per changed row.
class Decoded(NamedTuple):
    """The JSON columns of one row as decoded values, and what tells
    whether they changed."""

    #: What tells whether the row's JSON columns changed: ``metrics_key``
    #: of its metrics, its ``cpu_info`` and ``networks`` texts, and
    #: ``instances_key`` of its instance entries.
    metrics_key: int
    cpu_info_text: str
    networks_text: str
    instances_key: int | None
    #: ``reported.ReportedMetrics`` when the report was well formed.
    metrics: Mapping[str, Metric]
    bad_metrics: frozenset[str]
    instance_metrics: Mapping[str, Mapping[str, Metric]]
    cpu_info: dict
    networks: frozenset[str]
    #: What was wrong with ``cpu_info`` and ``networks``.
    column_problems: tuple[str, ...] = ()
    #: The node's reports up to this one (``[metrics] history_window``).
    history: history_mod.MetricHistory = history_mod.EMPTY
    #: instance.cpu.percent by instance uuid, up to this report
    #: (``[metrics] instance_history_window``; empty when 0).
    instance_history: history_mod.MetricHistory = history_mod.EMPTY


_new_tuple = tuple.__new__
#: ``epoch()`` of a report's one time: the reports of a refresh share a
#: few (``metric_entries.recent_stamps`` hands out one object per text),
#: where a conversion makes a timedelta and a float per report.
_stamp_epoch = functools.lru_cache(maxsize=256)(epoch)


def metrics_key(text: str) -> int:
    """What the cache keeps of a row's metrics text: its hash, enough to
    tell whether a changed row holds a new report (a refresh) or whether
    a row changed without moving its change key (a full load). The text
    itself is most of a host's memory (a report is a few KB), and what
    the cache needs of it is decoded. Two texts of one 64-bit (keyed)
    hash would be taken for the same: a collision costs one row's
    metrics until its next report. One int, not a tuple with the text's
    length: two objects fewer per key, two keys per report.
    """
    return hash(text)


def instances_key(text: str | None) -> int | None:
    """``metrics_key`` of a row's ``instance_metrics`` column (None:
    NULL)."""
    return None if text is None else metrics_key(text)


#: The instance entries of every report that holds none: one read-only
#: mapping, not an object (and a lock) per host and report.
_NO_INSTANCES: Mapping[str, Mapping[str, Metric]] = types.MappingProxyType(
    {})
#: The bad metrics of every well-formed report: ``frozenset()`` makes a
#: set object per call.
_NO_BAD_METRICS: frozenset[str] = frozenset()


def decode_metrics(text: str, problems: list[str],
                   instance_entries: list[dict] | None = None
                   ) -> tuple[dict[str, Metric], frozenset[str]]:
    """The valid host metrics of a report and the names of the malformed
    ones; what is wrong is described in ``problems``; the instance
    entries (``"instance"`` in them) go to ``instance_entries``."""
    entries = load_json(text, "metrics", problems)
    if entries is None:
        return {}, frozenset()
    if not isinstance(entries, list):
        problems.append(f"metrics hold a {type(entries).__name__}, not a "
                        "list")
        return {}, frozenset()
    metrics: dict[str, Metric] = {}
    bad: set[str] = set()
    stamps = recent_stamps()
    for index, entry in enumerate(entries):
        if type(entry) is not dict:
            problems.append(f"metric entry #{index} {short(entry)} is not "
                            "an object")
            continue
        if "instance" in entry:
            # One instance's measurement (instance.*), not the host's:
            # host filters and weighers never see it.
            if instance_entries is not None:
                instance_entries.append(entry)
            continue
        name = entry.get("name")
        if type(name) is not str or not name:
            problems.append(f"metric entry #{index} has no name")
            continue
        if name in metrics or name in bad:
            problems.append(f"metric {name} is reported twice; the first "
                            "entry is used")
            continue
        found = reading(entry, stamps)
        if type(found) is str:
            bad.add(name)
            problems.append(f"metric {name}: {found}")
            continue
        metrics[name] = Metric(*found)
    return metrics, frozenset(bad)


def decode_cpu_info(text: str, problems: list[str]) -> dict:
    info = load_json(text, "cpu_info", problems)
    if info is None:
        return {}
    if not isinstance(info, dict):
        problems.append(f"cpu_info holds a {type(info).__name__}, not an "
                        "object")
        return {}
    return info


def decode_networks(text: str, problems: list[str]) -> frozenset[str]:
    networks = load_json(text, "networks", problems)
    if networks is None:
        return frozenset()
    if not isinstance(networks, list):
        problems.append(f"networks hold a {type(networks).__name__}, not a "
                        "list")
        return frozenset()
    names = [n for n in networks if isinstance(n, str)]
    if len(names) != len(networks):
        problems.append("networks hold entries that are not names: "
                        + short([n for n in networks
                                  if not isinstance(n, str)]))
    return frozenset(names)


def _parsed_instances(row: NodeRow, in_metrics: bool,
                      in_report: list[report_columns.Entry] | None
                      ) -> tuple[Callable[[], list[dict]] | None,
                                 dict[str, tuple[float, float]] | None]:
    """A well-formed report's instance entries, to be read when first
    used, and their instance.cpu.percent readings when ``in_report`` is
    a list (the instance history keeps them: the metrics list's parsed
    instance entries, or the row's own column's added to it). The
    readings are None when an entry is irregular: the entries are then
    decoded, and their problems logged, from the parse at hand.

    ``in_metrics``: whether the metrics list holds instance entries. It
    then is the format of an agent older than schema revision 0007,
    which wrote the row last, and the column (another writer's, if
    any) is not read."""
    own = None if in_metrics else row.instance_metrics
    node = row.hypervisor_hostname
    # Only balancers read them, for the hosts they look at; the texts are
    # kept for them only if they hold some.
    entries = instance_entries.on_first_use(
        node, own, row.metrics if in_metrics else None)
    if in_report is None:
        return entries, None
    if own is not None:
        try:
            in_report.extend(report_columns.read_entries(own))
        except (msgspec.DecodeError, TypeError):
            # Decoded from the texts, and logged, as every report's.
            return entries, None
    readings = instance_entries.cpu_readings(in_report)
    if readings is None:
        entries = functools.partial(instance_entries.as_dicts, in_report)
    return entries, readings


def _history(previous: Decoded | None, metrics: Mapping[str, Metric],
             floats: array | None, window: float,
             unsettled: list[history_mod.MetricHistory] | None
             ) -> history_mod.MetricHistory:
    """The node's report history with this report's ``metrics`` added: a
    column at a time when the report was well formed (``floats``: its
    values as floats, else None); ``unsettled``: see ``decode``."""
    held = previous.history if previous is not None else history_mod.EMPTY
    if floats is None:
        return held.appended(metrics, window)
    names, stamps = metrics.layout.names, metrics.stamps
    if type(stamps) is datetime.datetime:
        times: float | Sequence[float] = _stamp_epoch(stamps)
    else:
        times = history_block.epochs(stamps)
    return held.appended_report(names, times, floats, window, unsettled)


def _description(row: NodeRow, previous: Decoded | None
                 ) -> tuple[dict, frozenset[str], tuple[str, ...]]:
    """The node's ``cpu_info`` and ``networks`` decoded, and what was
    wrong with them: the previous decoding's while their texts did not
    change (reports change the metrics only: the node's description is
    decoded once per change of its own)."""
    if (previous is not None and previous.cpu_info_text == row.cpu_info
            and previous.networks_text == row.networks):
        return previous.cpu_info, previous.networks, previous.column_problems
    found: list[str] = []
    cpu_info = decode_cpu_info(row.cpu_info, found)
    networks = decode_networks(row.networks, found)
    return cpu_info, networks, tuple(found)


def reported(row: NodeRow, previous: Decoded, history_window: float,
             columns: report_columns.Columns,
             unsettled: list[history_mod.MetricHistory] | None = None
             ) -> Decoded | None:
    """``decode`` of a row's new report, read by the refresh already
    (``columns``), when ``previous`` decoded the node's ``cpu_info`` and
    ``networks`` as they still are, without a problem, and the report's
    metrics list holds no instance entries; None for any other row.
    Without an instance history (``[metrics] instance_history_window``
    0: ``changed`` checks).

    Most changed rows are such a report, one a minute per node: what
    ``decode`` checks for the others is most of its own cost.
    """
    metrics, floats, instances_held = columns
    cpu_info, networks = previous.cpu_info_text, previous.networks_text
    if (instances_held or previous.column_problems
            or row.cpu_info != cpu_info or row.networks != networks):
        return None
    own, node = row.instance_metrics, row.hypervisor_hostname
    # The row's own column alone (most reports): its text read on first
    # use by ``column_entries`` itself, without a reader object per
    # report (``decode`` gathers its rarer rows' through
    # ``instance_entries.on_first_use``).
    instances = (_NO_INSTANCES if own is None else
                 instance_metrics_mod.OnFirstUse(
                     instance_entries.column_entries, node, own))
    return _new_tuple(Decoded, (
        metrics_key(row.metrics), cpu_info, networks, instances_key(own),
        metrics, _NO_BAD_METRICS, instances, previous.cpu_info,
        previous.networks, (),
        _history(previous, metrics, floats, history_window, unsettled),
        history_mod.EMPTY))


def changed(row: NodeRow, previous: Decoded | None,
            history_window: float, instance_window: float,
            columns: report_columns.Columns | None,
            unsettled: list[history_mod.MetricHistory] | None = None
            ) -> Decoded:
    """``decode`` of a changed row: through ``reported`` when its change
    is a new report that can be (without an instance history)."""
    if previous is not None and columns is not None and instance_window <= 0:
        found = reported(row, previous, history_window, columns, unsettled)
        if found is not None:
            return found
    return decode(row, previous, history_window, instance_window, columns,
                  unsettled)


def decode(row: NodeRow, previous: Decoded | None = None,
           history_window: float = 0.0,
           instance_window: float = 0.0,
           columns: report_columns.Columns | None = None,
           unsettled: list[history_mod.MetricHistory] | None = None
           ) -> Decoded:
    """Decode the JSON columns; what is malformed is left out and logged.

    Only rows whose JSON columns changed are decoded, so the warning
    appears once per change of those columns rather than once per
    scheduling request or claim.
    ``previous``: the row's last decoding, whose ``cpu_info`` and
    ``networks`` are kept when their text did not change, and whose
    report history this report is added to (``history_window`` seconds
    of it kept, and ``instance_window`` of its instances' when not 0).
    ``columns``: the report's, when the refresh read them already
    (``report_columns.refresh_columns``; a report without instance
    entries). ``unsettled``: where histories whose held-back reports are
    to be added later go (``MetricHistory.appended_report``), for the
    caller's ``history.settle_together``.
    """
    problems: list[str] = []
    in_report: list[report_columns.Entry] | None = (
        [] if instance_window > 0 else None)
    if columns is None:
        columns = report_columns.columns(row.metrics, in_report)
    metrics: Mapping[str, Metric]
    readings = floats = None
    node = row.hypervisor_hostname
    if columns is not None:
        metrics, floats, instances_held = columns
        bad_metrics: frozenset[str] = _NO_BAD_METRICS
        entries, readings = _parsed_instances(row, instances_held, in_report)
    else:
        found_entries: list[dict] = []
        metrics, bad_metrics = decode_metrics(row.metrics, problems,
                                               found_entries)
        entries = instance_entries.on_first_use(
            node, None if found_entries else row.instance_metrics,
            found=found_entries)
    cpu_info, networks, column_problems = _description(row, previous)
    problems.extend(column_problems)
    instances = (_NO_INSTANCES if entries is None else
                 instance_metrics_mod.OnFirstUse(entries, node))
    # Every field, without the named tuple's Python-level __new__: one
    # is made per changed row.
    decoded = _new_tuple(Decoded, (
        metrics_key(row.metrics), row.cpu_info, row.networks,
        instances_key(row.instance_metrics), metrics,
        bad_metrics, instances, cpu_info, networks, column_problems,
        _history(previous, metrics, floats, history_window, unsettled),
        instance_entries.instance_history(
            previous.instance_history if previous is not None
            else history_mod.EMPTY, instances, readings, instance_window)))
    if problems:
        LOG.warning("Compute node %s (host %s, id %s) reports malformed "
                    "data; it is scheduled on for what remains: %s",
                    row.hypervisor_hostname, row.host, row.id,
                    "; ".join(problems))
    return decoded
