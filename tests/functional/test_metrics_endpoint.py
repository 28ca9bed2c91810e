"""``[scheduler] metrics_port``: the real ``scheduler-service`` over the
local RabbitMQ serves Prometheus metrics that count the decisions it
made, with one worker and with two (whose counts the parent sums).
"""

import re
import socket

import psutil
import pytest

from scheduler import exception
from tests.functional.rpc_harness import FLEET
from tests.functional.rpc_harness import SERVING
from tests.functional.rpc_harness import SPEC
from tests.functional.rpc_harness import new_uuid
from tests.functional.rpc_harness import scheduler_api
from tests.functional.rpc_harness import scrape
from tests.functional.rpc_harness import wait_for_log
from tools import service_harness

CALLS = 40
# oslo.log's default format: date, time, pid, level, logger.
DECISION_LINE = (r"^\S+ \S+ (\d+) INFO scheduler\.common\.observability "
                 r"\[[^\]]*\] decision request_id=(\S+) outcome=(\S+) ")


@pytest.mark.parametrize("workers", [1, 2])
def test_decisions_reach_the_metrics_endpoint(
        workers, service_config, start_console_script):
    port = service_harness.free_port()
    config = service_config({"scheduler": {
        "workers": workers, "metrics_port": port,
        "metrics_host": "127.0.0.1"}})
    process = start_console_script("scheduler-service", config_file=config)
    wait_for_log(lambda: process.stderr, SERVING, process=process.popen,
                 count=workers)
    before = scrape(port)
    placed = ("scheduler_decisions_total", (("outcome", "placed"),))
    assert before[placed] == 0
    with scheduler_api(config) as api:
        instances = [new_uuid() for _ in range(CALLS)]
        for number, instance in enumerate(instances):
            chosen, = api.select_destinations(
                SPEC, [instance], context={"request_id": f"req-m{number}"})
            assert chosen[0]["host"] in FLEET
        with pytest.raises(exception.NoValidHost):
            api.select_destinations(
                {"flavor": {**SPEC["flavor"], "memory_mb": 10**6}},
                [new_uuid()], context={"request_id": "req-none"})
        for instance in instances:
            assert api.release(instance) is True

    after = scrape(port)
    assert after[placed] == CALLS
    assert after["scheduler_decisions_total",
                 (("outcome", "no_valid_host"),)] == 1
    count = after["scheduler_decision_duration_seconds_count",
                  (("outcome", "placed"),)]
    assert count == CALLS
    assert after["scheduler_decision_duration_seconds_bucket",
                 (("le", "+Inf"), ("outcome", "placed"))] == CALLS
    assert after["scheduler_decision_duration_seconds_sum",
                 (("outcome", "placed"),)] > 0
    assert after["scheduler_claims_total", ()] == CALLS
    assert after["scheduler_filter_removed_hosts_total",
                 (("filter", "RamFilter"),)] >= 3
    assert after["scheduler_host_refresh_duration_seconds_count",
                 (("kind", "full"),)] >= workers

    lines = re.findall(DECISION_LINE, process.stderr, re.MULTILINE)
    assert sorted(rid for _pid, rid, _outcome in lines) == sorted(
        [f"req-m{number}" for number in range(CALLS)] + ["req-none"])
    if workers > 1:
        # Both workers decided, and the parent served their sum.
        children = psutil.Process(process.popen.pid).children()
        assert {int(pid) for pid, _rid, _outcome in lines} == {
            child.pid for child in children}
    process.stop()
    assert "Traceback" not in process.stderr


def test_a_port_in_use_stops_start_up_with_status_2(
        service_config, run_console_script):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = service_config({"scheduler": {
            "metrics_port": port, "metrics_host": "127.0.0.1"}})
        result = run_console_script("scheduler-service", config_file=config)
    assert result.returncode == 2, result.stderr
    line, = result.stderr.strip().splitlines()
    assert f"[scheduler] metrics_port: cannot listen on 127.0.0.1:{port}" \
        in line
