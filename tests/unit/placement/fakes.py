"""Helpers shared by the balance planner tests (unit and functional): a
fleet with its claims and history, and a planner on it."""

import dataclasses
import datetime
import json
import uuid

import sqlalchemy as sa
from oslo_config import cfg

from scheduler.db import models
from scheduler.placement import balance_planner as planner_mod
from scheduler.placement import migrations as migrations_mod
from scheduler.policies import cluster as cluster_policy

NODES = models.ComputeNode.__table__


ALLOCATIONS = models.Allocation.__table__


HOST_VCPUS = 16


#: cpu.percent of a node's own work, without instances.
BASE_LOAD = 5.0


@dataclasses.dataclass
class Fleet:
    """Nodes, where instances run and how busy they are."""

    engine: sa.Engine
    ticks: int
    nodes: dict[str, int] = dataclasses.field(default_factory=dict)
    #: instance uuid -> (host, vCPUs, cpu.percent it makes on a host)
    placement: dict[str, tuple[str, int, float]] = dataclasses.field(
        default_factory=dict)
    minute: int = 0
    #: migration uuid -> tick at which it completes
    in_flight: dict[str, int] = dataclasses.field(default_factory=dict)

    def now(self) -> datetime.datetime:
        """The simulated time: it reaches the real time at tick
        ``ticks``."""
        return models.utcnow() - datetime.timedelta(
            minutes=self.ticks - self.minute)

    def add_host(self, host: str, instances: int, vcpus: int = 2,
                 cluster: str = "c1", busy: float = 1.0) -> None:
        now = models.utcnow()
        with self.engine.begin() as connection:
            self.nodes[host] = connection.execute(NODES.insert().values(
                uuid=str(uuid.uuid4()), host=host,
                hypervisor_hostname=host, cluster=cluster,
                availability_zone="nova", vcpus=HOST_VCPUS,
                memory_mb=65536, local_gb=1000, metrics="[]",
                changed_at=now, updated_at=now)).inserted_primary_key[0]
            for _ in range(instances):
                instance = str(uuid.uuid4())
                self.placement[instance] = (
                    host, vcpus, busy * 100.0 * vcpus / HOST_VCPUS)
                connection.execute(ALLOCATIONS.insert().values(
                    uuid=str(uuid.uuid4()), instance_uuid=instance,
                    compute_node_id=self.nodes[host], vcpus=vcpus,
                    memory_mb=1024, disk_gb=10, created_at=now))

    def cpu(self, host: str) -> float:
        return BASE_LOAD + sum(load for where, _, load
                               in self.placement.values() if where == host)

    def count(self, host: str) -> int:
        return sum(where == host for where, _, _ in self.placement.values())

    def report(self) -> None:
        """Every node reports its cpu.percent, stamped with the simulated
        time."""
        stamp = self.now().isoformat(timespec="microseconds") + "Z"
        real = models.utcnow()
        with self.engine.begin() as connection:
            for host, node_id in self.nodes.items():
                connection.execute(NODES.update().where(
                    NODES.c.id == node_id).values(
                        metrics=json.dumps([{
                            "name": "cpu.percent", "value": self.cpu(host),
                            "timestamp": stamp, "source": "sim"}]),
                        metrics_updated_at=real, updated_at=real,
                        changed_at=real,
                        generation=NODES.c.generation + 1))

    def start(self, planned, duration: int) -> None:
        for migration_ in planned:
            self.in_flight[migration_.uuid] = self.minute + duration

    def land(self, store: migrations_mod.MigrationStore) -> None:
        """Complete the migrations due this tick: the instance now runs
        on the destination."""
        due = [m for m in store.active()
               if self.in_flight.get(m.uuid, self.minute) <= self.minute]
        for migration_ in due:
            assert store.finish(migration_.uuid, migrations_mod.COMPLETED)
            _, vcpus, load = self.placement[migration_.instance_uuid]
            self.placement[migration_.instance_uuid] = (
                migration_.dest_host, vcpus, load)
            del self.in_flight[migration_.uuid]


def planner(conf, fleet: Fleet, policy: str, **kwargs):
    conf.set_override("cluster_policies", {"c1": policy, "c2": policy},
                      group="scheduler")
    return planner_mod.BalancePlanner(
        conf, policies=cluster_policy.load_policies(conf), clock=fleet.now,
        **kwargs)


def standard_fleet(engine, ticks: int) -> Fleet:
    """Ten hosts of 16 vCPUs; instances of 2 busy vCPUs (12.5% each)."""
    fleet = Fleet(engine, ticks)
    for host, instances in (("h0", 7), ("h1", 6), ("h2", 1), ("h3", 1),
                            ("h4", 2), ("h5", 3), ("h6", 4), ("h7", 2),
                            ("h8", 3), ("h9", 0)):
        fleet.add_host(host, instances)
    return fleet


def record_history(fleet: Fleet, plan: planner_mod.BalancePlanner) -> None:
    """Reports of minutes 0 to 2, recorded in the utilisation history by
    dry runs: the standard fleet's overload has lasted the two minutes
    evenly_distributed waits for, and nothing is planned yet."""
    for fleet.minute in range(3):
        fleet.report()
        plan.balance(dry_run=True)


def claims_by_instance(engine) -> dict[str, str]:
    with engine.connect() as connection:
        rows = connection.execute(sa.select(
            ALLOCATIONS.c.instance_uuid, NODES.c.host).join_from(
                ALLOCATIONS, NODES)).all()
    return dict(rows)


def planner_conf(conf: cfg.ConfigOpts) -> cfg.ConfigOpts:
    """``conf`` with vCPUs counted one for one and one candidate host per
    decision (the planner's tests)."""
    conf.set_override("cpu_allocation_ratio", 1.0, group="filter_scheduler")
    conf.set_override("host_subset_size", 1, group="filter_scheduler")
    return conf


HIGH = 80.0
