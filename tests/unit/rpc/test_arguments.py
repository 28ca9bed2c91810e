"""RPC calls with an unknown or missing argument (issue 18 item 10): an
InvalidRequest naming the argument, one log line, no traceback."""

import inspect
import logging

import pytest

from scheduler import exception
from scheduler.rpc import arguments
from tests.unit.rpc.fakes import SPEC
from tests.unit.rpc.fakes import UUID1
from tests.unit.rpc.fakes import _Bus


@pytest.fixture(scope="module")
def rpc_bus():
    bus = _Bus()
    yield bus
    bus.close()


@pytest.fixture
def client(rpc_bus):
    """oslo.messaging's client itself: SchedulerAPI only sends what the
    methods take."""
    rpc_bus.manager.__init__()
    return rpc_bus.api._client


@pytest.mark.parametrize("method, kwargs, message", [
    ("select_destinations", {"request_spec": SPEC, "bogus": 1},
     "select_destinations: unknown argument 'bogus' (expected "
     "request_spec, instance_uuids, return_alternates)"),
    ("select_destinations", {"instance_uuids": [UUID1]},
     "select_destinations: missing argument 'request_spec'"),
    ("explain", {}, "explain: missing argument 'request_spec'"),
    ("release", {"uuid": UUID1},
     "release: unknown argument 'uuid' (expected instance_uuid)"),
    ("balance", {"dry_run": True, "cluster": None, "force": True},
     "balance: unknown argument 'force' (expected cluster, dry_run, "
     "migration_policy)"),
])
def test_a_malformed_call_is_an_invalid_request_naming_the_argument(
        rpc_bus, client, caplog, method, kwargs, message):
    caplog.set_level(logging.INFO)
    with pytest.raises(exception.InvalidRequest) as raised:
        client.call({"request_id": "req-bad-args"}, method, **kwargs)
    assert str(raised.value).splitlines()[0] == message
    assert rpc_bus.manager.calls == []
    # One line, no traceback, from this project or from oslo.messaging.
    assert not [r for r in caplog.records if r.exc_info]
    lines = [r for r in caplog.records if message in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].levelno == logging.INFO
    # And the service serves the next call.
    assert client.call({}, "release", instance_uuid=UUID1) is True


def test_a_refused_select_has_its_decision_line(client, caplog):
    caplog.set_level(logging.INFO, logger="scheduler.common.observability")
    with pytest.raises(exception.InvalidRequest):
        client.call({"request_id": "req-7"}, "select_destinations")
    decision, = [r.getMessage() for r in caplog.records
                 if r.getMessage().startswith("decision ")]
    assert "request_id=req-7 outcome=invalid_request" in decision
    assert "missing argument 'request_spec'" in decision


def test_good_calls_reach_the_manager_unchanged(client):
    client.call({}, "select_destinations", request_spec=SPEC,
                instance_uuids=[UUID1], return_alternates=True)
    assert client.call({}, "release", instance_uuid=UUID1) is True


class Local:
    """An endpoint whose _guard lets errors through unchanged."""

    def _guard(self, method, ctxt, func, *args):
        return func(*args)

    @arguments.checked
    def release(self, ctxt, instance_uuid, force=False):
        return instance_uuid, force


def test_local_callers_may_pass_arguments_by_position():
    endpoint = Local()
    assert endpoint.release({}, UUID1) == (UUID1, False)
    assert endpoint.release({}, UUID1, force=True) == (UUID1, True)
    with pytest.raises(exception.InvalidRequest,
                       match="^release: 3 positional arguments for 2 "):
        endpoint.release({}, UUID1, True, 3)
    with pytest.raises(exception.InvalidRequest,
                       match="^release: unknown argument 'x'"):
        endpoint.release({}, UUID1, x=1)


def test_problem_names_the_first_unknown_then_the_first_missing():
    def method(self, ctxt, a, b=1):
        """A stand-in endpoint method."""
    parameters = list(inspect.signature(method).parameters.values())[2:]
    assert str(arguments.problem("m", parameters, {"z", "y"})) == (
        "m: unknown argument 'y' (expected a, b)")
    assert str(arguments.problem("m", parameters, {"b"})) == (
        "m: missing argument 'a'")
    assert arguments.problem("m", parameters, {"a"}) is None


def test_a_huge_request_id_and_argument_name_are_not_logged_verbatim(
        client, caplog):
    # Both are the client's: a 100 KB value must not reach the log whole.
    caplog.set_level(logging.DEBUG)
    huge = "x" * 100_000
    with pytest.raises(exception.InvalidRequest) as raised:
        client.call({"request_id": huge}, "release", **{huge: 1})
    assert len(str(raised.value)) < 1000
    logged = [r.getMessage() for r in caplog.records]
    assert logged
    assert all(huge not in line and len(line) < 1000 for line in logged)
    assert any("'xxxxx" in line and "...xxx" in line for line in logged)


@pytest.mark.parametrize("sent, shown", [
    ("req-0b5f9d6e-7c1a-4a6e-9a59-2f1e0f8b2d11",
     "req-0b5f9d6e-7c1a-4a6e-9a59-2f1e0f8b2d11"),
    ("a\nforged line", "'a\\nforged line'"),
    (["req-1"] * 100, "['req-1', 'req-1', 'req-1', 'req-1', 'req-1', ...]"),
    (None, "-"),
])
def test_request_id_is_shown_plain_only_when_plain(sent, shown):
    from scheduler.rpc import endpoint
    assert endpoint.request_id({"request_id": sent}) == shown
