"""Nova's MetricsWeigher tests (nova/tests/unit/scheduler/weights/
test_weights_metrics.py), ported to MetricsWeigher.

``REFUSED``: the ``weight_setting`` is refused as a whole (the service
exits 2 naming the option) where Nova skipped the malformed entry.
"""

import pytest

from scheduler.conf.metrics import WeightSetting
from scheduler.weights.metrics import MetricsWeigher
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import assert_ends
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import make_conf
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import weighed

REFUSED = "refused"
IDLE, KERNEL, USER = "cpu.idle.time", "cpu.kernel.time", "cpu.user.time"

METRICS = {
    "host1": {IDLE: 512, KERNEL: 1},
    "host2": {IDLE: 1024, KERNEL: 2},
    "host3": {IDLE: 3072, KERNEL: 1},
    "host4": {IDLE: 8192, KERNEL: 0},
    "host5": {IDLE: 768, KERNEL: 0, USER: 1},
    "host6": {IDLE: 2048, KERNEL: 0, USER: 2},
}


def _hosts(with_metrics: bool = True) -> list:
    if not with_metrics:
        return [nova_host("host1", "node1"), nova_host("host2", "node2")]
    return [nova_host(name, f"node{name[-1]}", metrics=metrics)
            for name, metrics in METRICS.items()]


CASES = [
    # Nova raised ComputeHostMetricNotFound; with [metrics] required every
    # host lacking the metric is removed (NoValidHost when none is left).
    Case("test_single_resource_no_metrics", {"candidates": 0},
         request={"setting": f"{IDLE}=1", "metrics": False},
         differs="missing-metric"),
    Case("test_single_resource", {"top": ("host4", 1.0)},
         request={"setting": f"{IDLE}=1"}),
    Case("test_multiple_resource", {"top": ("host2", 1.0)},
         request={"setting": f"{IDLE}=0.0001, {KERNEL}=1"}),
    Case("test_single_resource_duplicate_setting", {"top": ("host1", 1.0)},
         request={"setting": f"{IDLE}=-2, {IDLE}=1"}),
    Case("test_single_resourcenegative_ratio", {"top": ("host1", 1.0)},
         request={"setting": f"{IDLE}=-1"}),
    Case("test_multiple_resource_missing_ratio", REFUSED,
         request={"setting": f"{IDLE}=0.0001, {KERNEL}"},
         differs="strict-options"),
    Case("test_multiple_resource_wrong_ratio", REFUSED,
         request={"setting": f"{IDLE}=0.0001, {KERNEL} = 2.0t"},
         differs="strict-options"),
    Case("test_metric_not_found_required",
         {"top": ("host6", 1.0), "candidates": 2},
         request={"setting": f"{IDLE}=1, {USER}=2"},
         differs="missing-metric"),
    Case("test_metric_not_found_non_required", {"top": ("host5", 1.0)},
         request={"setting": f"{IDLE}=0.0001, {USER}=-1"},
         options={"metrics.required": False}),
    Case("test_host_with_agg", REFUSED,
         request={"setting": f"{IDLE}=0.0001, {KERNEL}"},
         differs="strict-options"),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_metrics_weigher(case):
    try:
        setting = WeightSetting()(case.request["setting"])
    except ValueError:
        assert case.expected == REFUSED
        return
    ranking = weighed(["MetricsWeigher"],
                      _hosts(case.request.get("metrics", True)),
                      options={"metrics.weight_setting": setting,
                               **case.options})
    assert_ends(ranking, case.expected)


PARSE_CASES = [
    Case("test_parse_setting[one]", [(IDLE, 1.0)],
         request={"setting": f"{IDLE}=1"}),
    Case("test_parse_setting[two]", [(IDLE, 1.0), (KERNEL, -2.1)],
         request={"setting": f"{IDLE}=1, {KERNEL}=-2.1"}),
    Case("test_parse_setting[bad ratio]", REFUSED,
         request={"setting": f"{IDLE}=a1, {KERNEL}=-2.1"},
         differs="strict-options"),
    Case("test_parse_setting[no ratio]", REFUSED,
         request={"setting": f"{IDLE}, {KERNEL}=-2.1"},
         differs="strict-options"),
    Case("test_parse_setting[no name]", REFUSED,
         request={"setting": f"=5, {KERNEL}=-2.1"},
         differs="strict-options"),
]


@pytest.mark.parametrize("case", PARSE_CASES, ids=ids(PARSE_CASES))
def test_nova_parse_setting(case):
    try:
        parsed = WeightSetting()(case.request["setting"])
    except ValueError as e:
        # What the exit-2 error says of the option's value.
        assert "name=ratio" in str(e)
        parsed = REFUSED
    assert parsed == case.expected


def test_metrics_weigher_multiplier():
    # The aggregate half of Nova's test has no counterpart
    # (no-aggregates).
    weigher = MetricsWeigher(make_conf({"metrics.weight_multiplier": -1.0}))
    assert weigher.multiplier(nova_request()) == -1.0
