"""scheduler.hosts.cache.manager.HostManager: claims, releases, reports and
node changes an incremental refresh sees."""


import pytest

from scheduler.db import models
from scheduler.hosts.cache.manager import HostManager
from tests.unit.hosts.cache.fakes import ALLOCATIONS
from tests.unit.hosts.cache.fakes import NODES
from tests.unit.hosts.cache.fakes import SECOND
from tests.unit.hosts.cache.fakes import add_node
from tests.unit.hosts.cache.fakes import by_host
from tests.unit.hosts.cache.fakes import claim
from tests.unit.hosts.cache.fakes import held_claims
from tests.unit.hosts.cache.fakes import metrics_json
from tests.unit.hosts.cache.fakes import report
from tests.unit.hosts.cache.fakes import update_node


def test_new_claim_bumping_the_generation_is_seen(engine, manager):
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    assert manager.host_states()[0].free_vcpus == 128
    instance = claim(engine, node, vcpus=3, memory_mb=2048, disk_gb=7,
                     group="g")
    host = manager.host_states()[0]
    assert not manager.last_refresh.full
    assert manager.last_refresh.allocations_read == 1
    assert host.free_vcpus == 125
    assert host.free_disk_gb == 93
    assert host.instances == {instance}
    assert host.instance_groups == {"g"}
    assert (host.vcpus_pending, host.memory_mb_pending) == (3, 2048)
    assert host.generation == 1


def test_report_alone_keeps_the_cached_claims(engine, manager):
    start = models.utcnow() - 20 * SECOND
    node = add_node(engine, "a", when=start)
    instance = claim(engine, node, vcpus=3, when=start + SECOND)
    assert manager.host_states()[0].vcpus_pending == 3
    report(engine, node, start + 2 * SECOND, cpu_percent=55.0)
    host = manager.host_states()[0]
    assert manager.last_refresh.rows_decoded == 1
    assert manager.last_refresh.allocations_read == 0
    assert host.metrics["cpu.percent"].value == 55.0
    assert host.instances == {instance} and host.vcpus_claimed == 3
    assert held_claims(manager, node) == [(instance, 3, 512, 10, None)]
    # The report counts the claim now: no longer pending.
    assert host.vcpus_pending == 0 and host.claims_pending == 0


def test_report_alone_leaves_pending_the_claims_it_predates(engine,
                                                            manager):
    start = models.utcnow() - 20 * SECOND
    node = add_node(engine, "a", when=start)
    claim(engine, node, vcpus=3, memory_mb=300, when=start + SECOND)
    # Made at +3 s but committed, with its key bump, at +1.5 s: a report
    # at +2 s then predates it.
    later = claim(engine, node, vcpus=2, memory_mb=200,
                  when=start + 3 * SECOND, group="g1", bump=False)
    update_node(engine, node, changed_at=start + 1.5 * SECOND,
                generation=NODES.c.generation + 1)
    before = manager.host_states()[0]
    assert (before.claims_pending, before.vcpus_pending) == (2, 5)
    report(engine, node, start + 2 * SECOND)
    host = manager.host_states()[0]
    assert manager.last_refresh.allocations_read == 0
    assert (host.claims_pending, host.vcpus_pending,
            host.memory_mb_pending) == (1, 2, 200)
    assert (host.vcpus_claimed, host.memory_mb_claimed) == (5, 500)
    assert later in host.instances and host.instance_groups == {"g1"}


def test_report_older_than_the_last_finds_pending_again_what_it_predates(
        engine, manager, clock):
    """A node's clock set back: its report predates a claim that the
    report before it counted, and the claim is pending again."""
    start = models.utcnow() - 8 * SECOND
    node = add_node(engine, "a", when=start)
    claim(engine, node, vcpus=3, memory_mb=300, when=start + 2 * SECOND)
    report(engine, node, start + 3 * SECOND)
    counted = manager.host_states()[0]
    assert (counted.claims_pending, counted.vcpus_pending) == (0, 0)
    # Inside the overlap window, seen when it is checked (once a second).
    report(engine, node, start + SECOND)
    clock.now += 1
    host = manager.host_states()[0]
    assert manager.last_refresh.allocations_read == 0
    assert host.metrics_updated_at == start + SECOND
    assert (host.claims_pending, host.vcpus_pending,
            host.memory_mb_pending) == (1, 3, 300)


@pytest.mark.parametrize("claim_first", [True, False])
def test_report_and_claim_since_the_last_read_reads_the_claims(
        engine, manager, claim_first):
    start = models.utcnow() - 20 * SECOND
    node = add_node(engine, "a", when=start)
    manager.host_states()
    if claim_first:
        instance = claim(engine, node, vcpus=3, when=start + SECOND)
        report(engine, node, start + 2 * SECOND, cpu_percent=55.0)
    else:
        report(engine, node, start + SECOND, cpu_percent=55.0)
        instance = claim(engine, node, vcpus=3, when=start + 2 * SECOND)
    host = manager.host_states()[0]
    assert manager.last_refresh.allocations_read == 1
    assert host.instances == {instance} and host.vcpus_claimed == 3
    assert host.vcpus_pending == (0 if claim_first else 3)


def test_release_then_report_reads_the_claims(engine, manager):
    start = models.utcnow() - 20 * SECOND
    node = add_node(engine, "a", when=start)
    instance = claim(engine, node, vcpus=3, when=start + SECOND)
    assert manager.host_states()[0].instances == {instance}
    with engine.begin() as connection:
        connection.execute(ALLOCATIONS.delete())
        connection.execute(NODES.update().values(
            generation=NODES.c.generation + 1,
            changed_at=start + 2 * SECOND))
    report(engine, node, start + 3 * SECOND, cpu_percent=5.0)
    host = manager.host_states()[0]
    assert host.instances == set() and host.vcpus_claimed == 0


def test_released_claim_is_seen(engine, manager):
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    instance = claim(engine, node, vcpus=3)
    assert manager.host_states()[0].vcpus_claimed == 3
    with engine.begin() as connection:
        connection.execute(ALLOCATIONS.delete().where(
            ALLOCATIONS.c.instance_uuid == instance))
        connection.execute(NODES.update().where(NODES.c.id == node).values(
            generation=NODES.c.generation + 1, changed_at=models.utcnow()))
    host = manager.host_states()[0]
    assert host.vcpus_claimed == 0 and host.instances == set()


def test_generation_bump_alone_is_seen(engine, manager, clock):
    # Two writers may stamp the same changed_at; the generation differs,
    # which the check of the overlap window (once a second) notices.
    when = models.utcnow()
    node = add_node(engine, "a", when=when)
    manager.host_states()
    claim(engine, node, vcpus=2, when=when)
    clock.now += 1
    assert manager.host_states()[0].vcpus_claimed == 2


def test_new_node_appears_incrementally(engine, manager):
    add_node(engine, "a")
    manager.host_states()
    add_node(engine, "0-first")
    states = manager.host_states()
    assert not manager.last_refresh.full
    assert [s.host for s in states] == ["0-first", "a"]


def test_renamed_node_is_reordered(engine, manager):
    first = add_node(engine, "a")
    add_node(engine, "b")
    manager.host_states()
    update_node(engine, first, host="c")
    assert [s.host for s in manager.host_states()] == ["b", "c"]


def test_deleted_node_disappears_after_full_refresh_interval(
        conf, engine, manager, clock):
    conf.set_override("full_refresh_interval", 1, group="filter_scheduler")
    add_node(engine, "a")
    doomed = add_node(engine, "b")
    assert len(manager.host_states()) == 2
    with engine.begin() as connection:
        connection.execute(NODES.delete().where(NODES.c.id == doomed))

    clock.now += 0.5
    assert len(manager.host_states()) == 2
    assert not manager.last_refresh.full

    clock.now += 0.6
    assert [s.host for s in manager.host_states()] == ["a"]
    assert manager.last_refresh.full
    assert manager.last_refresh.hosts == 1


def test_now_argument_replaces_the_clock(conf, engine, manager, clock):
    conf.set_override("full_refresh_interval", 5, group="filter_scheduler")
    add_node(engine, "a")
    manager.host_states(now=100.0)
    manager.host_states(now=104.0)
    assert not manager.last_refresh.full
    manager.host_states(now=105.0)
    assert manager.last_refresh.full


def test_full_refresh_reuses_unchanged_decodings(conf, engine, manager,
                                                 clock, count_json):
    conf.set_override("full_refresh_interval", 1, group="filter_scheduler")
    ids = [add_node(engine, f"h{i}") for i in range(4)]
    before = manager.host_states()
    count_json.clear()
    clock.now += 2
    after = manager.host_states()
    assert manager.last_refresh.full
    assert manager.last_refresh.rows_read == 4
    assert manager.last_refresh.rows_decoded == 0
    assert count_json == []
    assert after[0].metrics is before[0].metrics

    # A writer that forgot changed_at is caught by the next full load.
    with engine.begin() as connection:
        connection.execute(NODES.update().where(NODES.c.id == ids[1]).values(
            metrics=metrics_json(models.utcnow(), cpu_percent=55.0)))
    clock.now += 2
    states = by_host(manager.host_states())
    assert manager.last_refresh.rows_decoded == 1
    assert states["h1"].metrics["cpu.percent"].value == 55.0


def test_a_refresh_keeps_the_decoding_of_a_report_that_did_not_change(
        engine, manager, count_json):
    # A claim another process took (or a release) changes the node's row
    # and not its report: the report is neither parsed nor added to the
    # node's history again.
    node = add_node(engine, "h0", metrics=metrics_json(
        models.utcnow(), cpu_percent=10.0, memory_free=2.0 ** 30))
    before = manager.host_states()[0]
    history = before.metric_history
    assert history.reports("cpu.percent") == 1
    count_json.clear()
    claim(engine, node)
    after = manager.host_states()[0]
    assert manager.last_refresh.rows_fetched == 1
    assert manager.last_refresh.rows_decoded == 0
    assert count_json == []
    assert len(after.instances) == 1
    assert after.metrics is before.metrics
    assert after.metric_history is history
    assert history.reports("cpu.percent") == 1


def test_full_refresh_picks_up_new_conf_defaults(conf, engine, manager,
                                                 clock):
    conf.set_override("full_refresh_interval", 1, group="filter_scheduler")
    add_node(engine, "a")
    manager.host_states()
    conf.set_override("ram_allocation_ratio", 1.0, group="filter_scheduler")
    clock.now += 2
    assert manager.host_states()[0].free_ram_mb == 16384


_REPORTED_ONLY = {"metric_history", "instance_history", "instance_metrics"}


def test_a_reported_state_is_the_state_a_full_load_builds(conf, engine,
                                                         manager):
    # A report-only change copies the cached state and sets the report's
    # fields: every other field is as a fresh load reads it.
    start = models.utcnow() - 20 * SECOND
    node = add_node(engine, "a", when=start)
    claim(engine, node, vcpus=3, memory_mb=300, when=start + SECOND)
    claim(engine, node, vcpus=2, when=start + 3 * SECOND, bump=False)
    update_node(engine, node, changed_at=start + 1.5 * SECOND,
                generation=NODES.c.generation + 1)
    manager.host_states()
    report(engine, node, start + 2 * SECOND, cpu_percent=55.0)
    host = manager.host_states()[0]
    assert manager.last_refresh.allocations_read == 0
    fresh = HostManager(conf).host_states()[0]
    assert host is not fresh
    assert {name: value for name, value in vars(host).items()
            if name not in _REPORTED_ONLY} == {
        name: value for name, value in vars(fresh).items()
        if name not in _REPORTED_ONLY}
    assert host.metric_history.reports("cpu.percent") == 2


@pytest.mark.parametrize("column, value, field", [
    ("vcpus", 16, "vcpus"), ("disabled", True, "disabled"),
    ("cpu_allocation_ratio", 2.0, "cpu_allocation_ratio")])
def test_a_report_that_also_changed_the_node_is_read_whole(
        engine, manager, column, value, field):
    start = models.utcnow() - 20 * SECOND
    node = add_node(engine, "a", when=start)
    manager.host_states()
    # One writer, one key bump: the report and a column of the node.
    when = start + 2 * SECOND
    update_node(engine, node, metrics=metrics_json(when, cpu_percent=55.0),
                metrics_updated_at=when, updated_at=when, changed_at=when,
                generation=NODES.c.generation + 1, **{column: value})
    host = manager.host_states()[0]
    assert manager.last_refresh.allocations_read == 0
    assert getattr(host, field) == value
    assert host.metrics["cpu.percent"].value == 55.0
