"""The state of a report-only change is built when something first reads
it, and is then the state a full load builds from the same rows."""

import datetime

import numpy as np

from scheduler.claims.types import Claim
from scheduler.db import models
from scheduler.hosts import history as history_mod
from scheduler.hosts.cache.build import ReportedHost
from scheduler.hosts.cache.manager import HostManager
from scheduler.hosts.column_functions import attribute_epoch
from scheduler.hosts.column_functions import getter
from scheduler.hosts.table import epoch
from tests.unit.hosts.cache.fakes import NODES
from tests.unit.hosts.cache.fakes import add_node
from tests.unit.hosts.cache.fakes import claim
from tests.unit.hosts.cache.fakes import report

MINUTE = datetime.timedelta(minutes=1)


def same_as_loaded(conf, state) -> bool:
    """Whether ``state`` is the node's state as a cache of its own loads
    it, but for the report history (that cache saw the last report
    only)."""
    loaded = next(host for host in HostManager(conf).host_states()
                  if host.node_id == state.node_id)
    return ({**vars(state), "metric_history": None}
            == {**vars(loaded), "metric_history": None})


def deferred(manager: HostManager, node_id: int) -> ReportedHost:
    state = manager._entries[node_id].state
    assert type(state) is ReportedHost and state._state is None
    return state


def reported_node(engine, manager: HostManager, name: str,
                  start: datetime.datetime, cpu_percent: float) -> int:
    """A node loaded, then a report of it read without building its
    state."""
    node = add_node(engine, name, when=start)
    manager.host_states()
    report(engine, node, start + MINUTE, cpu_percent=cpu_percent)
    manager.host_table()
    deferred(manager, node)
    return node


def test_a_report_is_read_without_building_its_state(conf, engine,
                                                     manager):
    start = models.utcnow() - 10 * MINUTE
    nodes = [add_node(engine, name, when=start) for name in "ab"]
    table = manager.host_table()
    table.column("heartbeat", float, attribute_epoch("updated_at"))
    table.attribute("generation", np.int64)
    report(engine, nodes[1], start + MINUTE, cpu_percent=55.0)
    table = manager.host_table()
    host = deferred(manager, nodes[1])
    # The columns a report moves were patched from the row alone.
    assert table.column("heartbeat", float, attribute_epoch(
        "updated_at"))[1] == epoch(start + MINUTE)
    assert table.attribute("generation", np.int64)[1] == 1
    assert host._state is None
    built = table.hosts[1]
    # Built, it keeps no base beside its state.
    assert host._state is built and host.base() is built
    assert host._base is None
    assert same_as_loaded(conf, built)
    assert built.metrics["cpu.percent"].value == 55.0


def test_reports_in_a_row_build_from_the_last_state_built(conf, engine,
                                                          manager):
    start = models.utcnow() - 10 * MINUTE
    node = add_node(engine, "a", when=start)
    manager.host_states()
    # A claim after the report: pending until the next report.
    claim(engine, node, vcpus=2, when=start + MINUTE)
    assert manager.host_states()[0].claims_pending == 1
    for minute, value in ((2, 30.0), (3, 40.0), (4, 50.0)):
        report(engine, node, start + minute * MINUTE, cpu_percent=value)
        manager.host_table()
        deferred(manager, node)
    host = manager.host_states()[0]
    assert host.claims_pending == 0 and host.vcpus_claimed == 2
    assert host.metrics["cpu.percent"].value == 50.0
    assert host.metric_history.reports("cpu.percent") == 4
    assert same_as_loaded(conf, host)


def test_a_claim_is_taken_in_on_a_state_not_built(conf, engine, manager):
    start = models.utcnow() - 10 * MINUTE
    node = reported_node(engine, manager, "a", start, 20.0)
    when = models.utcnow()
    instance = claim(engine, node, vcpus=3, when=when)
    with engine.begin() as connection:
        generation = connection.execute(
            NODES.select().where(NODES.c.id == node)).one().generation
    assert manager.record_claim(Claim(
        "alloc-1", instance, node, "a", "a", "a.example.org", 3, 512, 10,
        generation=generation, changed_at=when))
    host = manager._entries[node].state
    assert host.vcpus_claimed == 3 and instance in host.instances
    assert host.metrics["cpu.percent"].value == 20.0
    # The next refresh finds the node as taken in.
    assert manager.host_states()[0] is host


def test_a_base_keeps_no_older_report_alive(conf, engine, manager):
    start = models.utcnow() - 10 * MINUTE
    node = add_node(engine, "a", when=start)
    manager.host_states()
    report(engine, node, start + MINUTE, cpu_percent=20.0)
    built = manager.host_states()[0]  # the next report's base
    report(engine, node, start + 2 * MINUTE, cpu_percent=30.0)
    manager.host_table()
    assert deferred(manager, node).base() is built
    # Handed down a second time, unread: without its report.
    report(engine, node, start + 3 * MINUTE, cpu_percent=40.0)
    manager.host_table()
    base = deferred(manager, node).base()
    assert not base.metrics and base.metric_history is history_mod.EMPTY
    assert base.instance_history is history_mod.EMPTY
    assert base.vcpus_claimed == built.vcpus_claimed
    assert manager.host_states()[0].metrics["cpu.percent"].value == 40.0


def test_a_claim_taken_in_then_a_report_counts_no_claim_pending(
        conf, engine, manager):
    start = models.utcnow() - 10 * MINUTE
    node = add_node(engine, "a", when=start)
    manager.host_states()
    when = start + MINUTE
    instance = claim(engine, node, vcpus=2, when=when)
    assert manager.record_claim(Claim(
        "alloc-1", instance, node, "a", "a", "a.example.org", 2, 512, 10,
        generation=1, changed_at=when))
    assert manager.host_states()[0].claims_pending == 1
    report(engine, node, start + 2 * MINUTE, cpu_percent=35.0)
    manager.host_table()
    host = deferred(manager, node).built()
    assert host.claims_pending == 0 and host.vcpus_claimed == 2
    assert same_as_loaded(conf, host)


def test_a_new_node_reorders_a_table_holding_deferred_hosts(conf, engine,
                                                             manager):
    start = models.utcnow() - 10 * MINUTE
    reported_node(engine, manager, "b", start, 25.0)
    add_node(engine, "a", when=start + 2 * MINUTE)
    hosts = manager.host_states()
    assert [host.host for host in hosts] == ["a", "b"]
    assert hosts[1].metrics["cpu.percent"].value == 25.0


def test_light_columns_patched_from_the_row_match_the_built_states(
        conf, engine, manager):
    start = models.utcnow() - 10 * MINUTE
    nodes = [add_node(engine, name, when=start) for name in "abc"]
    names = ("host", "updated_at", "metrics_updated_at", "generation",
             "changed_at")
    table = manager.host_table()
    for name in names:
        table.column(("light", name), object, getter(name))
    for minute, node in enumerate(nodes[1:], start=1):
        report(engine, node, start + minute * MINUTE, cpu_percent=5.0)
    table = manager.host_table()
    deferred(manager, nodes[2])
    patched = {name: table.column(("light", name), object, getter(name))
               for name in names}
    for index, host in enumerate(table.hosts):
        for name in names:
            assert patched[name][index] == getattr(host, name)
