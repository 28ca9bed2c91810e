"""The host table's own column functions (a host's value in a column),
and which of them are light: they read only attributes a deferred host
answers without its state being built (``DeferredHost.LIGHT``), so that
a table patches their columns for a report without building the host's
state (``HostTable.replaced``)."""

import datetime
import operator
from collections.abc import Callable
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from scheduler.hosts.host_list import DeferredHost
from scheduler.hosts.host_list import built

if TYPE_CHECKING:
    from scheduler.hosts.state import HostState

ColumnFunction = Callable[["HostState"], object]

_EPOCH = datetime.datetime(1970, 1, 1)
_SECOND = datetime.timedelta(seconds=1)


def epoch(moment: datetime.datetime | None) -> float:
    """Seconds since 1970 of a naive UTC datetime, NaN for None.

    Exact to the microsecond for any date of this era (a double spaces
    0.24 µs apart around 2^31 s), and monotonic, so comparing the floats
    is comparing the datetimes.
    """
    if moment is None:
        return np.nan
    return (moment - _EPOCH) / _SECOND


def epoch_of(moment_of: Callable[["HostState"], datetime.datetime | None]
             ) -> Callable[["HostState"], float]:
    """A column function: ``epoch()`` of ``moment_of(host)``, keeping the
    last moment converted. A column is patched in the order a refresh
    read its rows (by change time), and the rows of one time hold one
    object of it (the scan converts equal values once), so a run of them
    costs one conversion; a moment of its own costs an identity check
    more than ``epoch()``."""
    held = [(None, np.nan)]  # replaced whole: a reader sees one pair

    def value(host: "HostState") -> float:
        moment = moment_of(host)
        last, seconds = held[0]
        if moment is last:
            return seconds
        seconds = epoch(moment)
        held[0] = (moment, seconds)
        return seconds
    return value


#: The column functions declared light (``light()``).
_LIGHT: set[ColumnFunction] = set()


def light(value: ColumnFunction) -> ColumnFunction:
    """Declare that the column function ``value`` reads only attributes
    of ``DeferredHost.LIGHT``: a table then gives it a deferred host's
    ``light`` object (not a ``HostState``: another attribute would be
    missing or differ), without building the host's state. For the
    scheduler's own column functions; a plugin's are given states."""
    _LIGHT.add(value)
    return value


def is_light(value: ColumnFunction) -> bool:
    """Whether ``value`` was declared light."""
    try:
        return value in _LIGHT
    except TypeError:  # an unhashable callable: never declared
        return False


#: The column functions of attributes, by attribute (and ``epoch:``
#: attribute): one object each, so that a table knows them light.
_GETTERS: dict[str, ColumnFunction] = {}


def getter(name: str) -> ColumnFunction:
    """A column function: the HostState attribute ``name`` (light when
    the attribute is)."""
    return _attribute_function(name, name, operator.attrgetter)


def attribute_epoch(name: str) -> Callable[["HostState"], float]:
    """A column function: ``epoch()`` of the datetime attribute ``name``
    (light when the attribute is)."""
    def made(attribute: str) -> Callable[["HostState"], float]:
        return epoch_of(operator.attrgetter(attribute))
    return _attribute_function(f"epoch:{name}", name, made)


def _attribute_function(key: str, name: str,
                        make: Callable[[str], ColumnFunction]
                        ) -> ColumnFunction:
    """The one column function kept under ``key``, made of attribute
    ``name`` by ``make`` when first asked for, and declared light when
    the attribute is."""
    found = _GETTERS.get(key)
    if found is None:
        found = make(name)
        if name in DeferredHost.LIGHT:
            light(found)
        found = _GETTERS.setdefault(key, found)
    return found


def metric_value(name: str) -> Callable[["HostState"], float]:
    """A column function: the metric's value adjusted for pending claims
    (``HostState.metric_since`` without an age check), NaN if missing."""
    def value(host: "HostState") -> float:
        found = host.metric_since(name, None)
        return np.nan if found is None else found
    return value


def metric_epoch(name: str) -> Callable[["HostState"], float]:
    """A column function: when the metric was measured (``epoch()``),
    NaN if missing."""
    # A windowed statistic is as fresh as its metric's newest report.
    reported = name.partition(":")[0]

    def measured(host: "HostState") -> datetime.datetime | None:
        metric = host.metrics.get(reported)
        return None if metric is None else metric.timestamp
    return epoch_of(measured)


def with_built(rows: Mapping[int, "HostState | DeferredHost"]
               ) -> Mapping[int, "HostState"]:
    """``rows`` with their deferred hosts built, for the column functions
    that are not light."""
    if not any(isinstance(host, DeferredHost) for host in rows.values()):
        return rows
    return {index: built(host) for index, host in rows.items()}


def with_light(rows: Mapping[int, "HostState | DeferredHost"]
               ) -> Mapping[int, object]:
    """``rows`` with their deferred hosts' ``light`` objects, for the
    light column functions."""
    if not any(isinstance(host, DeferredHost) for host in rows.values()):
        return rows
    return {index: host.light if isinstance(host, DeferredHost) else host
            for index, host in rows.items()}
