"""A host list builds a deferred host's state when it hands the host out,
and only then; a table gives a deferred host to its light columns as it
is and builds it for the others."""

import datetime

import numpy as np
import pytest

from scheduler.hosts import change_kinds
from scheduler.hosts.column_functions import attribute_epoch
from scheduler.hosts.host_list import DeferredHost
from scheduler.hosts.host_list import HostList
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import epoch

WHEN = datetime.datetime(2026, 1, 1)


class Light:
    """What a deferred host answers without being built."""

    def __init__(self, host: str, generation: int):
        self.host = host
        self.generation = generation
        self.updated_at = self.changed_at = self.metrics_updated_at = (
            WHEN + datetime.timedelta(seconds=generation))


class CountedHost(DeferredHost):
    """A deferred host counting its builds."""

    __slots__ = ("builds",)

    def __init__(self, node_id: int, generation: int):
        super().__init__(Light(f"h{node_id}", generation))
        self.builds = 0

    def _build(self) -> HostState:
        self.builds += 1
        light = self.light
        return HostState(
            node_id=int(light.host[1:]), uuid=light.host, host=light.host,
            nodename=light.host, vcpus=4, generation=light.generation,
            updated_at=light.updated_at, changed_at=light.changed_at,
            metrics_updated_at=light.metrics_updated_at)


def state(node_id: int, generation: int = 0) -> HostState:
    return CountedHost(node_id, generation)._build()


def test_a_deferred_host_is_built_when_handed_out_and_kept():
    deferred = CountedHost(1, 3)
    hosts = HostList([state(0), deferred, state(2)])
    assert deferred.builds == 0
    first = hosts[1]
    assert isinstance(first, HostState) and first.generation == 3
    assert hosts[-2] is first and hosts.take([1, 0])[0] is first
    assert list(hosts)[1] is first
    assert deferred.builds == 1


@pytest.mark.parametrize("read", [list, lambda hosts: hosts.take([2, 1]),
                                  lambda hosts: hosts[1:]])
def test_every_way_of_reading_builds_the_deferred_hosts(read):
    deferred = CountedHost(1, 3)
    hosts = HostList([state(0), state(1)]).replaced({1: deferred})
    hosts = HostList(list(hosts) + [CountedHost(2, 5)])
    found = read(hosts)
    assert all(isinstance(host, HostState) for host in found)


def test_versions_sharing_a_chunk_share_the_built_state():
    hosts = HostList([state(index) for index in range(3)])
    deferred = CountedHost(1, 7)
    older = hosts.replaced({1: deferred})
    newer = older.replaced({2: state(2, 1)})
    assert newer[1] is older[1]
    assert list(older)[1] is newer[1]
    assert deferred.builds == 1
    # The version replaced before anything read it never builds it.
    replaced = CountedHost(0, 9)
    hosts.replaced({0: replaced}).replaced({0: state(0, 10)})[0]
    assert replaced.builds == 0


def test_columns_that_are_not_light_build_a_deferred_host():
    table = HostTable([state(index) for index in range(3)])
    heartbeat = table.column("heartbeat", float,
                             attribute_epoch("updated_at"),
                             change_kinds.REPORTS)
    generation = table.attribute("generation", np.int64)
    vcpus_left = table.column("vcpus_left", float,
                              lambda host: host.vcpus - host.generation)
    deferred = CountedHost(1, 5)
    newer = table.replaced({1: deferred}, kinds={1: change_kinds.REPORT})
    # The column that is not light had the host built for it, once.
    assert deferred.builds == 1
    assert newer.column("heartbeat", float, attribute_epoch("updated_at"),
                        change_kinds.REPORTS)[1] == epoch(
        WHEN + datetime.timedelta(seconds=5))
    assert newer.attribute("generation", np.int64).tolist() == [0, 5, 0]
    assert newer.column("vcpus_left", float, lambda host: 0.0).tolist() \
        == [4.0, -1.0, 4.0]
    assert newer.hosts[1] is deferred.built() and deferred.builds == 1
    # The older version's columns are as they were.
    assert heartbeat[1] == epoch(WHEN)
    assert generation.tolist() == [0, 0, 0] and vcpus_left[1] == 4.0


def test_a_table_of_light_columns_builds_no_deferred_host():
    table = HostTable([state(index) for index in range(3)])
    table.attribute("generation", np.int64)
    table.attribute("vcpus")
    deferred = CountedHost(2, 8)
    newer = table.replaced({2: deferred}, kinds={2: change_kinds.REPORT})
    assert newer.attribute("generation", np.int64)[2] == 8
    # vcpus: moved by no report, not recomputed.
    assert newer.attribute("vcpus")[2] == 4.0
    assert deferred.builds == 0


@pytest.mark.parametrize("read", [list, lambda hosts: hosts.take([0, 2])])
def test_a_version_made_from_one_with_deferred_hosts_builds_them(read):
    deferred = CountedHost(0, 2)
    older = HostList([state(index) for index in range(3)]).replaced(
        {0: deferred})
    newer = older.replaced({2: state(2, 1)})
    assert all(isinstance(host, HostState) for host in read(newer))
    assert deferred.builds == 1
