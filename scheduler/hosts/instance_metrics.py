"""Instance entries of a node's metrics: measurements of one instance.

A metrics entry carrying ``"instance": "<uuid>"`` (docs/operator-guide.md)
measures that instance on the node, under a name beginning ``instance.``:
``instance.cpu.percent`` (percent of the instance's own vCPUs),
``instance.memory.used`` (bytes). The host manager hands such entries here when
it decodes a row, so that they land in ``HostState.instance_metrics`` and never
among the host's metrics, which filters and weighers read.

An entry only counts for an instance the scheduler has a claim for on
that node: a uuid it does not know (an instance started behind its back,
or already moved away) is unavailable, as is an entry older than
``[metrics] max_age``.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping

from oslo_log import log as logging

from scheduler.common.abridge import short
from scheduler.hosts import metric_entries
from scheduler.hosts import state as hm

# The host cache's warnings keep the logger name they have always had.
LOG = logging.getLogger(__name__)

CPU_PERCENT = "instance.cpu.percent"
MEMORY_USED = "instance.memory.used"
PREFIX = "instance."


def decode(entries: Iterable[dict], problems: list[str]
           ) -> dict[str, dict[str, hm.Metric]]:
    """The valid instance entries by instance uuid and name; what is
    malformed is left out and described in ``problems``, which the host
    manager logs once per change of the row's JSON columns."""
    found: dict[str, dict[str, hm.Metric]] = {}
    stamps: dict[str, datetime.datetime] = {}
    for entry in entries:
        instance, name = entry.get("instance"), entry.get("name")
        if not isinstance(instance, str) or not instance:
            problems.append(f"instance entry {short(entry)} "
                            "names no instance")
            continue
        if not isinstance(name, str) or not name.startswith(PREFIX):
            problems.append(f"instance {instance}: entry name "
                            f"{short(name)} does not begin "
                            f"with '{PREFIX}'")
            continue
        metrics = found.setdefault(instance, {})
        if name in metrics:
            problems.append(f"instance {instance}: {name} is reported "
                            "twice; the first entry is used")
            continue
        read = metric_entries.reading(entry, stamps)
        if type(read) is str:
            problems.append(f"instance {instance}: {name} {read}")
            continue
        metrics[name] = hm.Metric(*read)
    return {instance: metrics for instance, metrics in found.items()
            if metrics}


#: Held while an ``OnFirstUse`` decodes its entries.
_DECODING = threading.Lock()


class OnFirstUse(Mapping):
    """The instance entries of one report, decoded when first read.

    Only balancers read instance entries, once per tick, while every
    decision refreshes the reports that changed: decoding them up front
    cost each refresh as much as the host's own metrics (a node's
    instances outnumber its metrics). Problems are logged when decoded,
    once per report.
    """

    # Slots and no lock of its own: one is made per report.
    __slots__ = ("_entries", "_node", "_decoded", "_text")

    def __init__(self, entries: Callable[..., list[dict]], node: str,
                 text: str | None = None):
        #: The instance entries of the report, when called (with the
        #: column's ``text`` and the ``node`` when a text is given: no
        #: reader object per report for the common column alone).
        self._entries = entries
        self._node = node
        self._text = text
        self._decoded: dict[str, dict[str, hm.Metric]] | None = None

    def _metrics(self) -> dict[str, dict[str, hm.Metric]]:
        decoded = self._decoded
        if decoded is not None:
            return decoded
        # Cached host states are shared by every request thread; the
        # decodings are few (balancers, once a tick), one lock for all.
        with _DECODING:
            if self._decoded is None:
                problems: list[str] = []
                text = self._text
                self._decoded = decode(
                    self._entries() if text is None
                    else self._entries(text, self._node), problems)
                self._entries, self._text = list, None
                if problems:
                    LOG.warning(
                        "Compute node %s reports malformed instance "
                        "entries; they are left out: %s", self._node,
                        "; ".join(problems))
            return self._decoded

    def __getitem__(self, instance: str) -> dict[str, hm.Metric]:
        return self._metrics()[instance]

    def __iter__(self) -> Iterator[str]:
        return iter(self._metrics())

    def __len__(self) -> int:
        return len(self._metrics())


def instance_metric(host: hm.HostState, instance_uuid: str, name: str,
                    cutoff: datetime.datetime | None) -> float | None:
    """The value of instance metric ``name`` of ``instance_uuid`` on
    ``host``; None when the host holds no claim of that instance, did not
    report it, or reported it before ``cutoff`` (``hm.stale_before``;
    None: no age check)."""
    if instance_uuid not in host.instances:
        return None
    metric = host.instance_metrics.get(instance_uuid, {}).get(name)
    if metric is None:
        return None
    if cutoff is not None and metric.timestamp < cutoff:
        return None
    return metric.value


def instance_cpu_mean(host: hm.HostState, instance_uuid: str,
                      window: float) -> float | None:
    """The instance's mean instance.cpu.percent over the ``window``
    seconds before its newest report, from the host's instance history
    (``[metrics] instance_history_window``), else its newest entry; None
    when the host holds no claim of it or never measured it."""
    found = instance_cpu_moments(host, instance_uuid, window)
    return None if found is None else found[0]


def instance_cpu_moments(host: hm.HostState, instance_uuid: str,
                         window: float) -> tuple[float, float | None] | None:
    """``instance_cpu_mean`` and the standard deviation beside it (None
    when no history is held: the newest entry alone has none)."""
    if instance_uuid not in host.instances:
        return None
    found = host.instance_history.moments(instance_uuid, window)
    if found is not None:
        return found
    newest = instance_metric(host, instance_uuid, CPU_PERCENT, None)
    return None if newest is None else (newest, None)
