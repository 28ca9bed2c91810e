"""The host table's own column functions."""

import datetime
import math
import types

from hypothesis import given
from hypothesis import strategies as st

from scheduler.hosts import column_functions
from scheduler.hosts.column_functions import attribute_epoch
from scheduler.hosts.column_functions import epoch
from scheduler.hosts.column_functions import metric_epoch
from scheduler.hosts.state import Metric

_MOMENTS = st.lists(st.one_of(st.none(), st.datetimes(
    min_value=datetime.datetime(1971, 1, 1),
    max_value=datetime.datetime(2100, 1, 1))), max_size=8)


def _same(found: float, moment: datetime.datetime | None) -> bool:
    expected = epoch(moment)
    return math.isnan(found) if math.isnan(expected) else found == expected


@given(_MOMENTS, st.lists(st.integers(0, 7), max_size=40))
def test_attribute_epoch_is_each_hosts_own_moment(moments, picks):
    # Hosts sharing moments, equal ones as distinct objects too, in any
    # order: the kept moment answers each host its own.
    hosts = [types.SimpleNamespace(updated_at=moments[pick % len(moments)])
             for pick in picks if moments]
    hosts += [types.SimpleNamespace(updated_at=None if moment is None else
                                    moment.replace())
              for moment in moments]
    column = attribute_epoch("updated_at")
    assert all(_same(column(host), host.updated_at) for host in hosts)


@given(_MOMENTS)
def test_metric_epoch_is_the_metrics_own_moment(moments):
    column = metric_epoch("cpu.percent:mean:10m")
    for moment in moments:
        metrics = {} if moment is None else {
            "cpu.percent": Metric(1.0, moment, "cpu")}
        host = types.SimpleNamespace(metrics=metrics)
        assert _same(column(host), moment)


def test_a_run_of_hosts_sharing_a_moment_converts_it_once(monkeypatch):
    converted = []

    def counted(moment):
        converted.append(moment)
        return epoch(moment)

    monkeypatch.setattr(column_functions, "epoch", counted)
    first = datetime.datetime(2026, 12, 1, 4, 0, 5)
    second = datetime.datetime(2026, 12, 1, 4, 0, 10)
    # As a refresh reads them: by change time, one object per time.
    hosts = [types.SimpleNamespace(changed_at=moment)
             for moment in [first] * 40 + [second] * 40 + [first.replace()]]
    column = column_functions.epoch_of(lambda host: host.changed_at)
    assert [column(host) for host in hosts] == [
        epoch(host.changed_at) for host in hosts]
    # An equal moment of another object is converted again, not reused
    # by equality.
    assert converted == [first, second, first]
