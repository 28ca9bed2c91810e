"""RamFilter, CoreFilter, DiskFilter and ComputeFilter read the reasons of
the hosts they removed from the host table (``rejection_reasons``): the
reasons their ``why_rejected`` gives each host, without a host state."""

import datetime

import numpy as np
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler.db import models
from scheduler.hosts.table import HostTable
from tests.fakes import make_host
from tests.unit.filters.fakes import OUR_FILTERS
from tests.unit.filters.fakes import make_spec
from tests.unit.filters.fakes import plain_conf

_RATIOS = st.sampled_from([0.5, 1.0, 1.5, 2.0, 16.0])
_hosts = st.fixed_dictionaries({
    "vcpus": st.integers(0, 64),
    "memory_mb": st.integers(0, 65536),
    "disk_gb": st.integers(0, 2000),
    "vcpus_claimed": st.integers(0, 128),
    "memory_mb_claimed": st.integers(0, 131072),
    "disk_gb_claimed": st.integers(0, 4000),
    "cpu_allocation_ratio": _RATIOS,
    "ram_allocation_ratio": _RATIOS,
    "disk_allocation_ratio": _RATIOS,
})
_flavors = st.fixed_dictionaries({
    "vcpus": st.integers(0, 64),
    "memory_mb": st.integers(0, 65536),
    "root_gb": st.integers(0, 1000),
    "ephemeral_gb": st.integers(0, 1000),
})


@settings(max_examples=200, deadline=None)
@given(st.lists(_hosts, min_size=1, max_size=12), _flavors,
       st.sampled_from(["RamFilter", "CoreFilter", "DiskFilter"]))
def test_the_reasons_read_from_the_table_are_those_of_each_host(
        fields, flavor, name):
    host_filter = OUR_FILTERS[name](plain_conf())
    hosts = [make_host(f"node-{index}", **values)
             for index, values in enumerate(fields)]
    spec = make_spec(flavor)
    table = HostTable(hosts)
    rows = np.flatnonzero(~host_filter.passes(table, spec))
    assert host_filter.rejection_reasons(table, rows, spec) == [
        host_filter.why_rejected(hosts[row], spec).reason
        for row in rows.tolist()]


def test_both_reasons_are_read():
    host_filter = OUR_FILTERS["RamFilter"](plain_conf())
    hosts = [make_host("full", memory_mb=4096, memory_mb_claimed=4096),
             make_host("small", memory_mb=512, ram_allocation_ratio=16.0),
             # Free exactly what one instance needs, the node smaller.
             make_host("exact", memory_mb=512, ram_allocation_ratio=2.0)]
    table = HostTable(hosts)
    larger = "instance larger than the node's RAM"
    assert host_filter.rejection_reasons(
        table, np.array([0, 1, 2]), make_spec({"memory_mb": 1024})) == [
            "insufficient RAM", larger, larger]


def test_a_free_amount_not_a_number_is_insufficient():
    # An infinite ratio over a node of nothing: 0 x inf.
    host_filter = OUR_FILTERS["RamFilter"](plain_conf())
    hosts = [make_host("nothing", memory_mb=0,
                       ram_allocation_ratio=float("inf"))]
    spec = make_spec({"memory_mb": 1024})
    assert host_filter.why_rejected(hosts[0], spec).reason == (
        "insufficient RAM")
    assert host_filter.rejection_reasons(
        HostTable(hosts), np.array([0]), spec) == ["insufficient RAM"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.none() | st.integers(0, 600)),
                min_size=1, max_size=12))
def test_the_compute_filter_reads_disabled_and_down(nodes):
    conf = plain_conf()
    host_filter = OUR_FILTERS["ComputeFilter"](conf)
    now = models.utcnow()
    hosts = [make_host(f"node-{index}", disabled=disabled,
                       disabled_reason=None, updated_at=None if age is None
                       else now - datetime.timedelta(seconds=age))
             for index, (disabled, age) in enumerate(nodes)]
    spec = make_spec()
    table = HostTable(hosts)
    rows = np.flatnonzero(~host_filter.passes(table, spec))
    assert host_filter.rejection_reasons(table, rows, spec) == [
        host_filter.why_rejected(hosts[row], spec).reason
        for row in rows.tolist()]
