"""The column-vs-per-host properties of ``hosts/test_table``, run against
the example plugin package of docs/plugin-guide.md as a third party's
plugins: MaxLoadFilter (column form only) and LoadAverageWeigher
(per-host form only) must judge and weigh alike by either path, alone
and in a scheduler beside built-in plugins.

The package is imported from its source directory: the functional tests
build and install it, the unit tests need only its modules.
"""

import random
import sys
from pathlib import Path
from unittest import mock

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler.common import clock
from scheduler.engine import filter_scheduler
from scheduler.engine import plugin_guard
from scheduler.hosts import state as hm
from scheduler.hosts.table import HostTable
from tests.unit.hosts.fakes import NOW
from tests.unit.hosts.fakes import OPTIONS
from tests.unit.hosts.fakes import PROPERTY
from tests.unit.hosts.fakes import _outcome
from tests.unit.hosts.fakes import _without_columns
from tests.unit.hosts.fakes import apply_options
from tests.unit.hosts.fakes import as_optional
from tests.unit.hosts.fakes import configured
from tests.unit.hosts.fakes import fleets
from tests.unit.hosts.fakes import metric_values
from tests.unit.hosts.fakes import moments
from tests.unit.hosts.fakes import request
from tests.unit.hosts.fakes import spec_dicts

sys.path.append(str(Path(__file__).resolve().parents[3] / "examples"
                       / "scheduler-example-plugins"))

from scheduler_example_plugins import LOAD_1M
from scheduler_example_plugins.load_weigher import LoadAverageWeigher
from scheduler_example_plugins.max_load_filter import MaxLoadFilter

# Loads at, around and far from the limits below, reported now (fresh
# whatever [metrics] max_age says) or at any age; or not at all.
load_values = st.sampled_from((0.0, 1.5, 4.0, 12.0, 12.000001)) \
    | metric_values
loads = st.one_of(
    st.none(),
    st.builds(hm.Metric, load_values, st.just(NOW), st.just("test")),
    st.builds(hm.Metric, load_values, moments, st.just("test")))


def _loaded(pairs):
    for host, (load, up) in pairs:
        if load is not None:
            host.metrics = {**host.metrics, LOAD_1M: load}
        if up:
            host.disabled = False
            host.updated_at = NOW
    return [host for host, _drawn in pairs]


# The fleets of hosts/test_table, some hosts reporting a load average, and
# more of them up than there (ComputeFilter would leave the example
# plugins few hosts to judge in a scheduler).
loaded_fleets = fleets().flatmap(lambda hosts: st.lists(
    st.tuples(loads, st.booleans()), min_size=len(hosts),
    max_size=len(hosts)).map(
        lambda drawn: _loaded(list(zip(hosts, drawn, strict=True)))))

example_options = st.fixed_dictionaries({
    **OPTIONS,
    ("example_plugins", "max_load_per_vcpu"): st.sampled_from(
        (0.0, 0.5, 1.5, 1e9)),
    ("example_plugins", "load_weight_multiplier"): st.sampled_from(
        (-1.0, 0.0, 2.0)),
})


def test_max_load_filter_passes_agrees_with_reject():
    with configured() as conf:
        MaxLoadFilter(conf)  # registers [example_plugins]

        @PROPERTY
        @given(hosts=loaded_fleets, spec_dict=spec_dicts,
               options=example_options)
        def check(hosts, spec_dict, options):
            apply_options(conf, options)
            # The limit is read when the plugin is loaded.
            host_filter = MaxLoadFilter(conf)
            verdicts = host_filter.passes(HostTable(hosts), request(spec_dict))
            assert verdicts.dtype == bool
            assert verdicts.shape == (len(hosts),)
            spec = request(spec_dict)
            assert verdicts.tolist() == [
                host_filter.reject(host, spec) is None for host in hosts]
            assert verdicts.tolist() == [
                rejection is None for rejection
                in host_filter.rejections(hosts, spec)]

        check()


def test_load_weigher_column_agrees_with_raw_weights():
    with configured() as conf:
        weigher = LoadAverageWeigher(conf)

        @PROPERTY
        @given(data=st.data(), hosts=loaded_fleets, spec_dict=spec_dicts,
               options=example_options)
        def check(data, hosts, spec_dict, options):
            apply_options(conf, options)
            rows = data.draw(st.lists(st.sampled_from(range(len(hosts))),
                                      unique=True) if hosts
                             else st.just([]))
            # The column the scheduler weighs with: the per-host form
            # over the candidates, as the weigher writes no column form.
            column, failed = plugin_guard.raw_weights(
                weigher, HostTable(hosts), np.array(rows, dtype=np.intp),
                request(spec_dict))
            assert failed is None
            assert column.shape == (len(rows),)
            expected = weigher.raw_weights([hosts[i] for i in rows],
                                           request(spec_dict))
            assert as_optional(column.tolist()) == expected

        check()


def test_scheduler_columns_decide_as_per_host_with_example_plugins():
    with configured() as conf, \
            mock.patch.object(clock, "utcnow", return_value=NOW):
        MaxLoadFilter(conf)  # registers [example_plugins]
        pipeline = filter_scheduler.Pipeline(
            ("ComputeFilter", "RamFilter"),
            (("RAMWeigher", 1.0), ("MetricsWeigher", 1.0)), "minmax")

        # Built once (loading the built-ins costs more than a decision);
        # the example plugins read their options when constructed, so
        # they are constructed again for each example.
        column, per_host = (filter_scheduler.FilterScheduler(
            conf, rng=random.Random(7), pipeline=pipeline) for _ in range(2))
        _without_columns(per_host)
        for built in (column, per_host):
            # First, so that it judges hosts the built-ins keep or remove.
            built.filters.insert(0, None)
            built.weighers.append(None)
            built._factors["LoadAverageWeigher"] = 1.0

        def with_examples(built, columns: bool):
            built.filters[0] = MaxLoadFilter(conf)
            built.weighers[-1] = LoadAverageWeigher(conf)
            if not columns:
                built.filters[0].passes = lambda table, spec: None
            return built

        @PROPERTY
        @given(hosts=loaded_fleets, spec_dict=spec_dicts,
               options=example_options, instances=st.integers(1, 3))
        def check(hosts, spec_dict, options, instances):
            apply_options(conf, options)
            uuids = [f"new-{i}" for i in range(instances)]
            assert (_outcome(with_examples(column, True), spec_dict, hosts,
                             uuids)
                    == _outcome(with_examples(per_host, False), spec_dict,
                                hosts, uuids))

        check()
