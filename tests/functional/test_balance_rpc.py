"""``balance`` over the bus: a real scheduler-service on RabbitMQ and
PostgreSQL plans a migration for an overloaded host, answers with it and
notifies ``scheduler.balance.migration_planned``."""

import queue

import pytest
import sqlalchemy as sa

from scheduler import exception
from scheduler import rpc
from scheduler.db import api as db_api
from scheduler.db import models
from tests.functional.rpc_harness import SERVING
from tests.functional.rpc_harness import client_conf
from tests.functional.rpc_harness import scheduler_api
from tests.functional.rpc_harness import wait_for_log
from tests.unit.placement.fakes import claims_by_instance
from tests.unit.placement.fakes import planner
from tests.unit.placement.fakes import record_history
from tests.unit.placement.fakes import standard_fleet
from tools.service_harness import BusNames

MIGRATIONS = models.Migration.__table__


@pytest.fixture
def fleet_conf(postgresql_url, balancing_conf):
    """The test's own view of the database, to build the fleet and its
    utilisation history with."""
    return balancing_conf(postgresql_url)


class _Collector:
    def __init__(self) -> None:
        self.events: queue.Queue = queue.Queue()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.events.put((event_type, payload))


def _balancing_sections(names: BusNames, broker_url: str,
                        db_url: str) -> dict:
    """A service balancing c1 evenly on call only (no periodic tick)."""
    sections = names.sections(broker_url)
    sections["database"] = {"connection": db_url}
    sections["filter_scheduler"] = {"cpu_allocation_ratio": 1.0}
    sections["scheduler"] = {"cluster_policies": "c1:evenly_distributed"}
    sections["balancer"] = {"interval": 0}
    return sections


def test_balance_plans_over_the_bus_and_notifies(
        broker_url, postgresql_url, fleet_conf,
        write_config, start_console_script):
    engine = db_api.get_engine(fleet_conf)
    fleet = standard_fleet(engine, ticks=2)
    history = planner(fleet_conf, fleet, "evenly_distributed")
    # Two minutes of reports with h0 and h1 above 80 %: the history the
    # service's balancer judges by.
    record_history(fleet, history)

    names = BusNames()
    config = write_config(_balancing_sections(names, broker_url,
                                              postgresql_url))
    service = start_console_script("scheduler-service", config_file=config)
    # After scheduler.rpc chose oslo.service's threading backend
    # (docs/architecture.md): a top-level import would sort before it.
    import oslo_messaging as om
    listener_conf = client_conf(config)
    transport = om.get_notification_transport(listener_conf)
    collector = _Collector()
    listener = om.get_notification_listener(
        transport, [om.Target(topic=names.notification_topic)], [collector],
        executor="threading")
    listener.start()
    try:
        wait_for_log(lambda: service.stderr, SERVING, process=service.popen)
        with scheduler_api(config, timeout=60) as api:
            with pytest.raises(exception.InvalidRequest, match="cluster"):
                api.balance(cluster=["c1"])
            dry, = api.balance("c1", dry_run=True)
            assert dry["allocation_id"] is None
            with engine.connect() as connection:
                assert connection.execute(sa.select(
                    sa.func.count()).select_from(MIGRATIONS)).scalar() == 0

            planned, = api.balance("c1")
            assert planned["source_host"] in ("h0", "h1")
            assert (planned["instance_uuid"], planned["dest_host"]) == (
                dry["instance_uuid"], dry["dest_host"])
            # The migration holds the destination claim.
            assert claims_by_instance(engine)[planned["uuid"]] == \
                planned["dest_host"]

        event_type, payload = collector.events.get(timeout=30)
        assert event_type == rpc.MIGRATION_PLANNED
        assert payload == planned
        with engine.connect() as connection:
            row = connection.execute(sa.select(MIGRATIONS)).one()
        assert (row.uuid, row.state, row.cluster_policy) == (
            planned["uuid"], "planned", "evenly_distributed")
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()
        service.stop()
        names.delete(broker_url)
