"""Fixtures of the RPC tests: a private ConfigOpts on an in-memory bus, a
fake manager served on it, the client and the notifications it sends."""

import queue

import pytest
from oslo_config import cfg

from scheduler.rpc import rpcapi
from scheduler.rpc import server
from tests.unit.rpc.fakes import FakeManager
from tests.unit.rpc.fakes import _Bus
from tests.unit.rpc.fakes import _make_conf


@pytest.fixture
def conf() -> cfg.ConfigOpts:
    """A ConfigOpts of its own, for tests that start their own server."""
    return _make_conf()


@pytest.fixture(scope="module")
def bus():
    bus = _Bus()
    yield bus
    bus.close()


@pytest.fixture
def manager(bus) -> FakeManager:
    """The shared server's manager, reset for the test."""
    bus.manager.__init__()
    return bus.manager


@pytest.fixture
def api(bus, manager) -> rpcapi.SchedulerAPI:
    return bus.api


@pytest.fixture
def service(bus) -> server.SchedulerRPCService:
    return bus.service


@pytest.fixture
def notifications(bus, manager) -> queue.Queue:
    """(ctxt, publisher_id, event_type, payload) received from now on."""
    # Wait for the notifications of earlier tests' calls, then drop them.
    while True:
        try:
            bus.events.get(timeout=0.2)
        except queue.Empty:
            return bus.events
