"""The host table under the FilterScheduler, end to end, and HostList."""

import datetime
import random
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.common import clock
from scheduler.engine import filter_scheduler
from scheduler.hosts import table as host_table
from scheduler.hosts.host_list import HostList
from scheduler.hosts.table import HostTable
from tests import fakes
from tests.unit.hosts.fakes import COLUMN_FILTERS
from tests.unit.hosts.fakes import COLUMN_WEIGHERS
from tests.unit.hosts.fakes import NOW
from tests.unit.hosts.fakes import OPTIONS
from tests.unit.hosts.fakes import PROPERTY
from tests.unit.hosts.fakes import _outcome
from tests.unit.hosts.fakes import _without_columns
from tests.unit.hosts.fakes import apply_options
from tests.unit.hosts.fakes import configured
from tests.unit.hosts.fakes import fleets
from tests.unit.hosts.fakes import spec_dicts

# -- the scheduler end to end -----------------------------------------------

SCHEDULER_FILTERS = tuple(cls.__name__ for cls in COLUMN_FILTERS) + (
    "IgnoreHostsFilter",)
SCHEDULER_WEIGHERS = tuple(cls.__name__ for cls in COLUMN_WEIGHERS) + (
    "ServerGroupSoftAffinityWeigher",)
MODES = ("minmax", "rank", "hardmax", "none")


scheduler_options = st.fixed_dictionaries({
    **OPTIONS,
    ("filter_scheduler", "host_subset_size"): st.just(1),
    ("filter_scheduler", "max_attempts"): st.integers(1, 4),
    ("filter_scheduler", "weight_maximums"): st.dictionaries(
        st.sampled_from(SCHEDULER_WEIGHERS),
        st.sampled_from(("1", "8192", "0.5")), max_size=3),
    ("filter_scheduler", "num_instances_weight_multiplier"):
        st.sampled_from((0.0, 1.0, -2.0)),
    ("filter_scheduler", "resources_weight_multiplier"):
        st.sampled_from((1.0, -1.0)),
    ("filter_scheduler", "ram_weight_multiplier"):
        st.sampled_from((1.0, -1.0, 0.0)),
    ("metrics", "weight_of_unavailable"): st.sampled_from((-10000.0, 0.0)),
})


def test_scheduler_columns_decide_as_per_host_plugins():
    with configured() as conf, \
            mock.patch.object(clock, "utcnow", return_value=NOW):
        pairs = {}
        for mode in MODES:
            pipeline = filter_scheduler.Pipeline(
                SCHEDULER_FILTERS,
                tuple((name, 1.0) for name in SCHEDULER_WEIGHERS), mode)
            column, per_host = (
                filter_scheduler.FilterScheduler(
                    conf, rng=random.Random(7), pipeline=pipeline)
                for _ in range(2))
            _without_columns(per_host)
            pairs[mode] = column, per_host

        @PROPERTY
        @given(hosts=fleets(max_size=5), spec_dict=spec_dicts,
               options=scheduler_options,
               mode=st.sampled_from(MODES),
               instances=st.integers(1, 3),
               group=st.sampled_from((None, "g1", "g2")))
        def check(hosts, spec_dict, options, mode, instances, group):
            apply_options(conf, options)
            if group:
                spec_dict = {**spec_dict, "scheduler_hints": {
                    "group": group, "group_policy": "soft-affinity"}}
            uuids = [f"new-{i}" for i in range(instances)]
            column, per_host = pairs[mode]
            assert (_outcome(column, spec_dict, hosts, uuids)
                    == _outcome(per_host, spec_dict, hosts, uuids))

        check()


# -- HostList ---------------------------------------------------------------

@PROPERTY
@given(size=st.sampled_from((0, 1, 1023, 1024, 1025, 3000)),
       data=st.data())
def test_host_list_behaves_as_the_list_it_holds(size, data):
    # Objects stand in for hosts: HostList only keeps and moves them.
    hosts = [object() for _ in range(size)]
    held = HostList(hosts)
    assert len(held) == size and list(held) == hosts and held == hosts
    if size:
        rows = data.draw(st.lists(st.integers(0, size - 1), max_size=20))
        assert held.take(rows) == [hosts[row] for row in rows]
        assert held[-1] is hosts[-1] and held[np.int64(0)] is hosts[0]
        assert held[1:5] == hosts[1:5]
    with pytest.raises(IndexError):
        held[size]
    changed = data.draw(st.dictionaries(
        st.integers(0, size - 1), st.builds(object), max_size=10)
        if size else st.just({}))
    expected = list(hosts)
    for index, host in changed.items():
        expected[index] = host
    assert list(held.replaced(changed)) == expected
    # The original is untouched.
    assert list(held) == hosts


def test_host_list_versions_share_the_chunks_they_do_not_change():
    held = HostList(object() for _ in range(3000))
    new = held.replaced({1500: object()})
    assert new._chunks[0] is held._chunks[0]
    assert new._chunks[2] is held._chunks[2]
    assert new._chunks[1] is not held._chunks[1]


def test_at_least_follows_the_rows_each_version_replaces():
    hosts = [fakes.make_host(name, node_id=number, vcpus=vcpus)
             for number, (name, vcpus) in enumerate(
                 [("a", 2), ("b", 4), ("c", 8)])]
    table = HostTable(hosts)
    assert table.attribute_at_least("vcpus", 2)
    assert not table.attribute_at_least("vcpus", 3)
    # The smallest value replaced by a larger one: the floor is worked
    # out again rather than kept below the truth.
    raised = table.replaced({0: fakes.make_host("a", node_id=0, vcpus=6)})
    assert raised.attribute_at_least("vcpus", 4)
    assert not raised.attribute_at_least("vcpus", 5)
    # A smaller value than the floor lowers it, in place or not.
    for hand_over in (False, True):
        lowered = raised.replaced(
            {2: fakes.make_host("c", node_id=2, vcpus=1)},
            hand_over=hand_over)
        assert not lowered.attribute_at_least("vcpus", 2)
        assert lowered.attribute_at_least("vcpus", 1)
    # NaN is at least nothing, built or brought in by a version.
    table.column("known", float,
                 lambda host: np.nan if host.vcpus == 0 else host.vcpus)
    assert table.at_least("known", 2)
    unknown = table.replaced({2: fakes.make_host("c", node_id=2, vcpus=0)})
    assert not unknown.at_least("known", -np.inf)


def test_at_least_of_a_column_built_as_integers():
    # A plugin may build an attribute's column as integers before the
    # capacity filters ask for its floor.
    table = HostTable([fakes.make_host("a", node_id=0, vcpus=4)])
    table.attribute("vcpus", np.int64)
    assert table.attribute_at_least("vcpus", 4)
    assert not table.attribute_at_least("vcpus", 5)
    assert HostTable([]).attribute_at_least("vcpus", 10 ** 9)


@given(st.data())
def test_at_least_never_answers_above_the_truth(data):
    values = st.one_of(st.integers(0, 6).map(float), st.just(np.nan))
    size = data.draw(st.integers(1, 6))
    current = data.draw(st.lists(values, min_size=size, max_size=size))

    def host(row):
        return fakes.make_host(f"h{row}", node_id=row, vcpus=current[row])

    table = HostTable([host(row) for row in range(size)])
    for _version in range(data.draw(st.integers(1, 6))):
        table.column("free", float, lambda state: state.vcpus)
        bound = data.draw(st.integers(-1, 7))
        assert table.at_least("free", bound) == all(
            value >= bound for value in current)
        changed = data.draw(st.dictionaries(
            st.integers(0, size - 1), values, max_size=size))
        for row, value in changed.items():
            current[row] = value
        table = table.replaced({row: host(row) for row in changed},
                               hand_over=data.draw(st.booleans()))


def test_fresh_metric_follows_reports_going_stale_and_fresh():
    now = clock.utcnow()
    recent = now - datetime.timedelta(seconds=300)
    hosts = [fakes.make_host(name, {"cpu.percent": value}, node_id=number)
             for number, (name, value) in enumerate([("a", 1.0),
                                                     ("b", 2.0)])]
    table = HostTable(hosts)
    np.testing.assert_array_equal(
        host_table.fresh_metric(table, "cpu.percent", recent), [1.0, 2.0])
    stale = table.replaced({1: fakes.make_host(
        "b", {"cpu.percent": 3.0}, age=600, node_id=1)})
    np.testing.assert_array_equal(
        host_table.fresh_metric(stale, "cpu.percent", recent),
        [1.0, np.nan])
    fresh = stale.replaced({1: fakes.make_host(
        "b", {"cpu.percent": 4.0}, node_id=1)})
    np.testing.assert_array_equal(
        host_table.fresh_metric(fresh, "cpu.percent", recent), [1.0, 4.0])


def test_fresh_metric_is_worked_out_once_per_metric_and_cutoff():
    now = clock.utcnow()
    hosts = [fakes.make_host("new", {"cpu.percent": 10.0}, node_id=1),
             fakes.make_host("old", {"cpu.percent": 20.0}, age=600,
                             node_id=2),
             fakes.make_host("none", node_id=3)]
    table = HostTable(hosts)
    recent = now - datetime.timedelta(seconds=300)
    first = host_table.fresh_metric(table, "cpu.percent", recent)
    np.testing.assert_array_equal(first, [10.0, np.nan, np.nan])
    assert host_table.fresh_metric(table, "cpu.percent", recent) is first
    assert not first.flags.writeable
    # Another cutoff is another pass.
    np.testing.assert_array_equal(
        host_table.fresh_metric(table, "cpu.percent",
                                now - datetime.timedelta(seconds=900)),
        [10.0, 20.0, np.nan])
    # A new table version starts afresh.
    newer = table.replaced({0: fakes.make_host(
        "new", {"cpu.percent": 30.0}, node_id=1)})
    np.testing.assert_array_equal(
        host_table.fresh_metric(newer, "cpu.percent", recent),
        [30.0, np.nan, np.nan])
