"""``scheduler-service`` as API nodes use it: a real subprocess serving
the RPC API over the local RabbitMQ, claiming in a SQLite database that
holds a small synthetic fleet, called through ``SchedulerAPI``
(``rpc_harness``: the broker, the fleet, the names private to a service).
"""

import dataclasses
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from scheduler import exception
from scheduler.rpc import rpcapi
from tests.functional.rpc_harness import FLEET
from tests.functional.rpc_harness import SERVING
from tests.functional.rpc_harness import SPEC
from tests.functional.rpc_harness import claims_of
from tests.functional.rpc_harness import make_fleet
from tests.functional.rpc_harness import new_uuid
from tests.functional.rpc_harness import scheduler_api
from tests.functional.rpc_harness import wait_for_log
from tools import service_harness
from tools.service_harness import BusNames

HUGE_RAM_SUMMARY = ("0/4 hosts available: 3 RamFilter (insufficient RAM), "
                    "1 ComputeFilter (disabled)")


@dataclasses.dataclass
class Service:
    """A scheduler-service subprocess shared by a module's tests."""

    config: Path
    db_url: str
    popen: subprocess.Popen
    stderr_path: Path

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@pytest.fixture(scope="module")
def shared_service(broker_url, tmp_path_factory) -> Iterator[Service]:
    """One service for the tests that only call it: a start costs about
    two seconds of imports and connecting."""
    tmp = tmp_path_factory.mktemp("rpc-service")
    db_url = f"sqlite:///{tmp / 'scheduler.sqlite'}"
    make_fleet(db_url)
    names = BusNames()
    sections = names.sections(broker_url)
    sections["DEFAULT"]["state_path"] = tmp / "state"
    sections["database"] = {"connection": db_url}
    config = tmp / "scheduler.conf"
    config.write_text(service_harness.config_text(sections))
    stderr_path = tmp / "service.stderr"
    with open(stderr_path, "wb") as stderr:
        popen = subprocess.Popen(
            [service_harness.console_script("scheduler-service"),
             "--config-file", str(config)], stdout=subprocess.DEVNULL,
            stderr=stderr, stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    service = Service(config, db_url, popen, stderr_path)
    try:
        wait_for_log(lambda: service.stderr, SERVING, process=popen)
        yield service
    finally:
        service_harness.stop_process(popen, timeout=30)
        names.delete(broker_url)


@pytest.fixture(scope="module")
def api(shared_service) -> Iterator[rpcapi.SchedulerAPI]:
    with scheduler_api(shared_service.config) as api:
        yield api



# The shared service


def test_select_destinations_returns_a_claimed_host(api, shared_service):
    instance = new_uuid()
    result = api.select_destinations(SPEC, [instance],
                                     return_alternates=True)
    assert len(result) == 1
    chosen, *alternates = result[0]
    assert set(chosen) == {"host", "nodename", "uuid", "weight",
                           "allocation_id"}
    assert chosen["host"] in FLEET
    assert chosen["allocation_id"]
    assert alternates, "max_attempts = 3 gives up to 2 alternates"
    assert all(a["allocation_id"] is None for a in alternates)
    assert chosen["host"] not in {a["host"] for a in alternates}
    assert api.release(instance) is True


def test_same_instance_gets_the_same_allocation(api):
    instance = new_uuid()
    first = api.select_destinations(SPEC, [instance])[0][0]
    again = api.select_destinations(SPEC, [instance])[0][0]
    assert again["allocation_id"] == first["allocation_id"]
    assert again["host"] == first["host"]
    assert api.release(instance) is True


def test_release_frees_the_claim(api, shared_service):
    instance = new_uuid()
    before = claims_of(shared_service.db_url)
    first = api.select_destinations(SPEC, [instance])[0][0]
    assert claims_of(shared_service.db_url) == before + 1
    assert api.release(instance) is True
    assert claims_of(shared_service.db_url) == before
    assert api.release(instance) is False
    # Released, the instance is placed anew.
    second = api.select_destinations(SPEC, [instance])[0][0]
    assert second["allocation_id"] != first["allocation_id"]
    assert api.release(instance) is True


def test_several_instances_in_one_request(api):
    instances = [new_uuid() for _ in range(3)]
    result = api.select_destinations({**SPEC, "num_instances": 3},
                                     instances)
    assert len(result) == 3
    assert len({r[0]["allocation_id"] for r in result}) == 3
    for instance in instances:
        assert api.release(instance) is True


def test_no_valid_host_over_the_bus(api, shared_service):
    before = claims_of(shared_service.db_url)
    spec = {"flavor": {**SPEC["flavor"], "memory_mb": 10**6}}
    with pytest.raises(exception.NoValidHost) as raised:
        api.select_destinations(spec, [new_uuid(), new_uuid()])
    assert type(raised.value) is exception.NoValidHost
    assert str(raised.value) == HUGE_RAM_SUMMARY
    assert claims_of(shared_service.db_url) == before


def test_explain_over_the_bus(api, shared_service):
    before = claims_of(shared_service.db_url)
    decision = api.explain({"flavor": {**SPEC["flavor"],
                                       "memory_mb": 8192}})
    hosts = {h["host"]: h for h in decision["hosts"]}
    assert decision["selected"][0] in ("big", "mid")
    assert hosts["small"]["filtered_by"] == "RamFilter"
    assert hosts["off"]["filtered_by"] == "ComputeFilter"
    assert claims_of(shared_service.db_url) == before


def test_context_request_id_reaches_the_service_log(api, shared_service):
    with pytest.raises(exception.NoValidHost):
        api.select_destinations({"flavor": {**SPEC["flavor"],
                                            "memory_mb": 10**6}},
                                context={"request_id": "req-func-1"})
    wait_for_log(lambda: shared_service.stderr, r"req-func-1", timeout=10)


_UUIDS = [str(uuid.UUID(int=i)) for i in range(1, 1002)]

MALFORMED = [
    # (method, kwargs, text the InvalidRequest message must contain)
    ("select_destinations", {"request_spec": []}, "request_spec: "),
    ("select_destinations", {"request_spec": "m1.small"}, "request_spec: "),
    ("select_destinations", {"request_spec": {}}, "request_spec.flavor"),
    ("select_destinations",
     {"request_spec": {"flavor": {**SPEC["flavor"], "vcpus": "two"}}},
     "request_spec.flavor.vcpus"),
    ("select_destinations",
     {"request_spec": {**SPEC, "flavour": {}}}, "request_spec.flavour"),
    ("select_destinations",
     {"request_spec": {**SPEC, "ignore_hosts": ["h"] * 100000}},
     "request_spec.ignore_hosts"),
    ("select_destinations",
     {"request_spec": {"flavor": {**SPEC["flavor"], "extra_specs": {
         "resources:cpu.percent": "<abc"}}}}, "resources:cpu.percent"),
    ("select_destinations",
     {"request_spec": SPEC, "instance_uuids": "abc"}, "instance_uuids"),
    ("select_destinations",
     {"request_spec": SPEC, "instance_uuids": ["not-a-uuid"]},
     "instance_uuids"),
    ("select_destinations",
     {"request_spec": SPEC, "instance_uuids": _UUIDS}, "instance_uuids"),
    ("select_destinations",
     {"request_spec": {**SPEC, "num_instances": 2},
      "instance_uuids": _UUIDS[:1]}, "instance_uuids"),
    ("select_destinations",
     {"request_spec": SPEC, "return_alternates": "yes"},
     "return_alternates"),
    ("explain", {"request_spec": [SPEC]}, "request_spec: "),
    ("explain", {"request_spec": {"flavor": None}}, "request_spec.flavor"),
    ("release", {"instance_uuid": 42}, "instance_uuid"),
    ("release", {"instance_uuid": "x" * 10000}, "instance_uuid"),
]


def test_malformed_payloads_are_invalid_requests(api, shared_service):
    before = claims_of(shared_service.db_url)
    failures = []
    for method, kwargs, field in MALFORMED:
        try:
            getattr(api, method)(**kwargs)
        except exception.InvalidRequest as e:
            message = str(e)
            if type(e) is not exception.InvalidRequest or \
                    field not in message or len(message) > 500:
                failures.append((method, field, type(e), message[:500]))
        except Exception as e:
            failures.append((method, field, type(e), str(e)[:500]))
        else:
            failures.append((method, field, "no error", None))
    assert failures == []
    assert claims_of(shared_service.db_url) == before
    # Still serving, and nothing in the log looks like a crash.
    instance = new_uuid()
    assert api.select_destinations(SPEC, [instance])[0][0]["host"] in FLEET
    assert api.release(instance)
    assert shared_service.popen.poll() is None
    assert "Traceback" not in shared_service.stderr


# Services of their own


def test_sigterm_stops_the_service_with_status_0(
        service_config, start_console_script):
    config = service_config()
    process = start_console_script("scheduler-service", config_file=config)
    wait_for_log(lambda: process.stderr, SERVING, process=process.popen)
    with scheduler_api(config) as api:
        instance = new_uuid()
        assert api.select_destinations(SPEC, [instance])[0][0]["host"]
    started = time.monotonic()
    process.popen.send_signal(signal.SIGTERM)
    result = process.wait(timeout=30)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 10
    assert "Traceback" not in result.stderr
    assert "stopped" in result.stderr


def test_kombu_memory_serves_a_single_process(
        service_config, start_console_script):
    config = service_config({"DEFAULT": {
        "transport_url": "kombu+memory:////"}})
    process = start_console_script("scheduler-service", config_file=config)
    wait_for_log(lambda: process.stderr, SERVING, process=process.popen)
    process.popen.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30).returncode == 0


def test_workers_share_the_queue(service_config, start_console_script):
    config = service_config({"DEFAULT": {"debug": True},
                             "scheduler": {"workers": 2}})
    process = start_console_script("scheduler-service", config_file=config)
    wait_for_log(lambda: process.stderr, SERVING, process=process.popen,
                 count=2)
    workers = psutil.Process(process.popen.pid).children()
    assert len(workers) == 2
    instances = [new_uuid() for _ in range(40)]
    with scheduler_api(config) as api:
        hosts = [api.select_destinations(SPEC, [i])[0][0]["host"]
                 for i in instances]
        assert set(hosts) <= set(FLEET)
        for instance in instances:
            assert api.release(instance) is True
    # Both workers answered (oslo.log prints the pid on every line).
    answered = {int(pid) for pid in re.findall(
        r"^\S+ \S+ (\d+) DEBUG scheduler\.rpc\.endpoint \[[^\]]*\] "
        r"select_destinations \(request", process.stderr, re.MULTILINE)}
    assert answered == {w.pid for w in workers}
    process.popen.send_signal(signal.SIGTERM)
    result = process.wait(timeout=60)
    assert result.returncode == 0, result.stderr
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE
                   for w in workers)
    assert "Traceback" not in result.stderr
