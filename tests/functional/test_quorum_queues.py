"""RabbitMQ quorum queues (``[oslo_messaging_rabbit] rabbit_quorum_queue
= true``, docs/scaling.md): a real ``scheduler-service`` with two workers
on the machine's broker serves ``select_destinations`` from quorum queues.

Each test runs in a virtual host of its own, created with ``rabbitmqctl``
and deleted afterwards whatever the outcome (deleting a virtual host
deletes its queues and exchanges), so nothing is left on the shared
broker and nothing there is reconfigured. ``rabbitmqctl`` manages the
local node: a broker elsewhere (``SCHEDULER_TEST_RABBIT_URL``), or a
``rabbitmqctl`` that cannot reach the node (it needs the node's Erlang
cookie, root's or rabbitmq's), skips these tests, except in CI where it
fails them.
"""

import shutil
import subprocess
import urllib.parse
import uuid
from collections.abc import Iterator

import pytest

from tests.functional import conftest
from tests.functional.rpc_harness import FLEET
from tests.functional.rpc_harness import SERVING
from tests.functional.rpc_harness import SPEC
from tests.functional.rpc_harness import claims_of
from tests.functional.rpc_harness import make_fleet
from tests.functional.rpc_harness import new_uuid
from tests.functional.rpc_harness import scheduler_api
from tests.functional.rpc_harness import wait_for_log

#: Seconds one rabbitmqctl command may take (it starts an Erlang VM).
RABBITMQCTL_TIMEOUT = 60
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
HOST = "sched-quorum"
TOPIC = "scheduler"
NOTIFICATIONS = "notifications"


def _unavailable(message: str) -> None:
    if conftest.in_ci():
        pytest.fail(f"CI=true: {message}", pytrace=False)
    pytest.skip(message)


def rabbitmqctl(*args: str) -> str:
    """stdout of ``rabbitmqctl -q ARGS``; RuntimeError when it fails."""
    try:
        result = subprocess.run(
            ["rabbitmqctl", "-q", *args], capture_output=True, text=True,
            timeout=RABBITMQCTL_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"rabbitmqctl {' '.join(args)}: {e}") from e
    if result.returncode != 0:
        raise RuntimeError(f"rabbitmqctl {' '.join(args)} failed with "
                           f"status {result.returncode}: {result.stdout}"
                           f"{result.stderr}")
    return result.stdout


def list_queues(vhost: str) -> dict[str, dict[str, str]]:
    """Every queue of ``vhost``: its type, durability and ready
    messages."""
    columns = ("name", "type", "durable", "messages_ready")
    lines = rabbitmqctl("list_queues", "-p", vhost, "--no-table-headers",
                        *columns).splitlines()
    queues = {}
    for line in lines:
        fields = line.split("\t")
        if len(fields) == len(columns):
            queues[fields[0]] = dict(zip(columns[1:], fields[1:],
                                         strict=True))
    return queues


@pytest.fixture
def private_vhost(broker_url) -> Iterator[tuple[str, str]]:
    """A virtual host of the test's own on the machine's broker, the
    broker's user allowed everything in it: (vhost name, transport URL).
    Deleted after the test, with everything declared in it."""
    parsed = urllib.parse.urlsplit(broker_url)
    if (parsed.hostname or "127.0.0.1") not in LOCAL_HOSTS:
        _unavailable(f"rabbitmqctl manages the local RabbitMQ node, not "
                     f"the broker at {parsed.hostname}")
    if shutil.which("rabbitmqctl") is None:
        _unavailable("rabbitmqctl is not installed")
    user = urllib.parse.unquote(parsed.username or "guest")
    vhost = f"msched-test-{uuid.uuid4().hex[:12]}"
    try:
        rabbitmqctl("add_vhost", vhost)
    except RuntimeError as e:
        _unavailable(f"cannot create a virtual host: {e}")
    try:
        rabbitmqctl("set_permissions", "-p", vhost, user, ".*", ".*", ".*")
        url = urllib.parse.urlunsplit(parsed._replace(
            path="/" + urllib.parse.quote(vhost, safe="")))
        yield vhost, url
    finally:
        rabbitmqctl("delete_vhost", vhost)


@pytest.mark.slow
@pytest.mark.parametrize("transient", [False, True],
                         ids=["quorum", "quorum+transient"])
def test_scheduler_service_on_quorum_queues_serves_select_destinations(
        private_vhost, transient, sqlite_url, write_config,
        start_console_script):
    vhost, url = private_vhost
    make_fleet(sqlite_url)
    config = write_config({
        "DEFAULT": {"transport_url": url, "host": HOST,
                    "scheduler_topic": TOPIC},
        "database": {"connection": sqlite_url},
        "scheduler": {"workers": 2},
        "oslo_messaging_rabbit": {
            "rabbit_quorum_queue": True,
            # Reply and fanout queues as quorum queues as well.
            "rabbit_transient_quorum_queue": transient},
        "oslo_messaging_notifications": {"driver": "messagingv2",
                                         "topics": NOTIFICATIONS},
    })
    service = start_console_script("scheduler-service", config_file=config)
    wait_for_log(lambda: service.stderr, SERVING, process=service.popen,
                 count=2)

    with scheduler_api(config) as api:
        instance = new_uuid()
        chosen = api.select_destinations(SPEC, [instance])[0][0]
        assert chosen["host"] in FLEET
        assert chosen["allocation_id"]
        assert claims_of(sqlite_url) == 1
        assert api.release(instance) is True
        assert claims_of(sqlite_url) == 0

    queues = list_queues(vhost)
    # The topic queue both workers consume, and the service's own.
    for name in (TOPIC, f"{TOPIC}.{HOST}"):
        assert queues[name]["type"] == "quorum", queues
        assert queues[name]["durable"] == "true", queues
    reply_queues = {name: queue for name, queue in queues.items()
                    if name.startswith("reply_")}
    assert reply_queues, queues
    expected = "quorum" if transient else "classic"
    assert {queue["type"] for queue in reply_queues.values()} == {expected}
    # The start and end notifications of the decision, kept in a quorum
    # queue until something consumes them.
    wait_for_log(lambda: str(list_queues(vhost).get(
                     f"{NOTIFICATIONS}.info")),
                 r"'type': 'quorum', 'durable': 'true', "
                 r"'messages_ready': '2'", process=service.popen)

    assert service.stop(timeout=30) == 0, service.stderr
    assert "Traceback" not in service.stderr
    assert "PRECONDITION_FAILED" not in service.stderr
