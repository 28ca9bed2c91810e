"""What ``scheduler.rpc.server`` sets up before it connects."""

import logging

import pytest

from scheduler.rpc import server
from tests.unit.rpc.fakes import _make_conf

RABBIT = "rabbit://guest:guest@127.0.0.1:5672/"


def _kombu_says_no_hostname() -> bool:
    record = logging.LogRecord(
        "kombu.connection", logging.WARNING, __file__, 1,
        "No hostname was supplied. Reverting to default '%s'",
        ("localhost",), None)
    return logging.getLogger("kombu.connection").filter(record)


@pytest.fixture(autouse=True)
def _no_filter_left_behind():
    # Before too: a test of another module that ran an in-process bus in
    # this process left the filter on kombu's (process-wide) logger.
    kombu = logging.getLogger("kombu.connection")
    kombu.removeFilter(server._NO_HOSTNAME_NOTICE)
    yield
    kombu.removeFilter(server._NO_HOSTNAME_NOTICE)


def test_an_in_process_bus_is_quiet_about_host_and_heartbeat():
    conf = _make_conf()  # kombu+memory, notifications on it too
    server.quiet_in_process_bus(conf)
    assert conf.oslo_messaging_rabbit.heartbeat_timeout_threshold == 0
    assert not _kombu_says_no_hostname()


@pytest.mark.parametrize("rpc_url, notification_url", [
    (RABBIT, None), ("kombu+memory:////", RABBIT)])
def test_a_broker_keeps_its_warnings(rpc_url, notification_url):
    conf = _make_conf()
    conf.set_override("transport_url", rpc_url)
    conf.set_override("transport_url", notification_url,
                      group="oslo_messaging_notifications")
    server.quiet_in_process_bus(conf)
    assert conf.oslo_messaging_rabbit.heartbeat_timeout_threshold == 60
    assert _kombu_says_no_hostname()
