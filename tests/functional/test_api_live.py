"""A policy attached through scheduler-api is used by a running
scheduler-service (over RabbitMQ) from the next request on, without a
restart; explain and the decision log name the policy and its version."""

import re

import pytest

from tests.functional import api_server
from tests.functional.rpc_harness import SERVING
from tests.functional.rpc_harness import new_uuid
from tests.functional.rpc_harness import scheduler_api
from tests.functional.rpc_harness import wait_for_log

SPEC = {"flavor": {"name": "m1.small", "vcpus": 1, "memory_mb": 1024,
                   "root_gb": 1}, "cluster": "c1"}
PACKING = {"name": "packing",
           "weights": [{"unit": "RAMWeigher", "factor": -1}]}


@pytest.fixture
def service(service_config, start_console_script):
    # One worker: each worker takes a new policy up on its own next
    # refresh, and the calls below would go to either of several.
    config = service_config({"scheduler": {"workers": 1}})
    process = start_console_script("scheduler-service", config_file=config)
    wait_for_log(lambda: process.stderr, SERVING, process=process.popen)
    return config, process


def test_attached_policy_is_used_without_restart(
        service, sqlite_url, tmp_path, write_config, start_console_script):
    config, process = service
    api = api_server.start(tmp_path, write_config, start_console_script,
                           sqlite_url, strategy="noauth")
    with scheduler_api(config) as rpc:
        before = rpc.explain(SPEC)
        # The fleet's default weighers prefer the most free RAM.
        assert before["selected"][0] == "big"
        assert before["policy"] is None
        policy = api.call("POST", "/v1/schedulingpolicies", PACKING).body
        attached = api.call("PUT", "/v1/clusters/c1", {
            "scheduling_policy": {"id": policy["id"]}})
        assert attached.status == 200, attached.body
        # The next request's host refresh reads the policy generation;
        # from the request after it on, the new policy decides.
        first, second = rpc.explain(SPEC), rpc.explain(SPEC)
        assert second["selected"][0] == "small", second
        assert second["policy"] == "packing v1"
        assert first["selected"][0] in ("big", "small")
        # An edit (version 2) reaches the service the same way.
        edited = api.call("PUT", f"/v1/schedulingpolicies/{policy['id']}",
                          {"weights": [{"unit": "RAMWeigher",
                                        "factor": 1}]})
        assert edited.body["version"] == 2
        rpc.explain(SPEC)
        after_edit = rpc.explain(SPEC)
        assert after_edit["selected"][0] == "big"
        assert after_edit["policy"] == "packing v2"
        instance = new_uuid()
        chosen = rpc.select_destinations(SPEC, [instance])[0][0]
        assert chosen["host"] == "big"
        assert rpc.release(instance)
    log = wait_for_log(lambda: process.stderr, r"outcome=placed")
    assert re.search(r"decision .*outcome=placed.*policy=.?packing v2",
                     log), log
