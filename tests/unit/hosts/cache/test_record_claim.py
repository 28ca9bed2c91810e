"""scheduler.hosts.cache.manager.HostManager.record_claim: a claim this
process made, taken into the cache as the next refresh would read it."""

import dataclasses
import datetime

import sqlalchemy as sa

from scheduler.db import host_queries
from scheduler.db import models
from scheduler.hosts.cache.manager import HostManager
from tests.unit.hosts.cache.fakes import NODES
from tests.unit.hosts.cache.fakes import SECOND
from tests.unit.hosts.cache.fakes import add_node
from tests.unit.hosts.cache.fakes import by_host
from tests.unit.hosts.cache.fakes import claim
from tests.unit.hosts.cache.fakes import held_claims
from tests.unit.hosts.cache.fakes import update_node


@dataclasses.dataclass(frozen=True)
class Claimed:
    """A claim as ``HostManager.record_claim`` reads it
    (``ClaimedUsage``)."""

    node_id: int
    generation: int | None
    changed_at: datetime.datetime | None
    instance_uuid: str
    vcpus: int = 3
    memory_mb: int = 512
    disk_gb: int = 10
    group: str | None = None


def test_recorded_claim_is_cached_as_a_refresh_would_read_it(
        conf, engine, manager):
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    add_node(engine, "b", when=models.utcnow() - 10 * SECOND)
    manager.host_states()
    table = manager.host_table()
    instance = claim(engine, node, vcpus=3, memory_mb=2048, disk_gb=7,
                     group="g")
    with engine.connect() as connection:
        row = connection.execute(sa.select(NODES).where(
            NODES.c.id == node)).one()
    assert manager.record_claim(Claimed(node, row.generation,
                                        row.changed_at, instance, 3, 2048,
                                        7, "g"))
    recorded = by_host(manager.host_states())["a"]
    # The refresh found the node's key as recorded: nothing read again.
    assert manager.last_refresh.rows_fetched == 0
    assert manager.last_refresh.allocations_read == 0
    reader = HostManager(conf)
    fresh = by_host(reader.host_states())["a"]
    assert recorded == fresh
    # The claims held for the node, as a fresh read finds them.
    assert held_claims(manager, node) == held_claims(reader, node) == [
        (instance, 3, 2048, 7, "g")]
    assert manager.host_table() is not table
    assert manager.host_table().column(
        "free_vcpus", float, lambda host: host.free_vcpus).tolist() == [
        125.0, 128.0]


def test_claim_after_another_change_is_left_to_the_refresh(engine,
                                                           manager):
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    manager.host_states()
    claim(engine, node, vcpus=2)  # another scheduler's: generation 1
    instance = claim(engine, node, vcpus=3)  # ours: generation 2
    assert not manager.record_claim(Claimed(node, 2, models.utcnow(),
                                            instance))
    host = manager.host_states()[0]
    assert host.vcpus_claimed == 5 and host.generation == 2
    assert not manager.record_claim(Claimed(node, 2, models.utcnow(),
                                            instance))
    assert manager.host_states()[0].vcpus_claimed == 5


def test_claim_the_cache_already_counts_is_not_recorded_twice(
        engine, manager, monkeypatch):
    """A refresh that read the node before our claim and its claims after
    counts the claim under the node's older generation: recording it
    would count it twice under a key the refresh would then trust."""
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    manager.host_states()
    scan_nodes = host_queries.scan_after
    claimed = {}

    def claim_between_the_reads(connection, after, probes=()):
        scan = scan_nodes(connection, after, probes)
        if not claimed:
            claimed["instance"] = claim(engine, node, vcpus=3)
        return scan

    update_node(engine, node, generation=1)
    monkeypatch.setattr(host_queries, "scan_after", claim_between_the_reads)
    host = manager.host_states()[0]
    monkeypatch.setattr(host_queries, "scan_after", scan_nodes)
    assert (host.generation, host.vcpus_claimed) == (1, 3)
    with engine.connect() as connection:
        row = connection.execute(sa.select(NODES).where(
            NODES.c.id == node)).one()
    assert row.generation == 2
    assert not manager.record_claim(Claimed(node, 2, row.changed_at,
                                            claimed["instance"]))
    host = manager.host_states()[0]
    assert (host.generation, host.vcpus_claimed) == (2, 3)


def test_claim_without_a_generation_is_left_to_the_refresh(engine,
                                                            manager):
    """An existing claim (not made by the call that returned it) carries
    no generation: the next refresh reads its node as usual."""
    node = add_node(engine, "a", when=models.utcnow() - 10 * SECOND)
    manager.host_states()
    instance = claim(engine, node, vcpus=3)
    assert not manager.record_claim(Claimed(node, None, None, instance))
    host = manager.host_states()[0]
    assert host.vcpus_claimed == 3 and host.generation == 1
