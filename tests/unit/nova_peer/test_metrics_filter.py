"""Nova's MetricsFilter tests (nova/tests/unit/scheduler/filters/
test_metrics_filters.py), ported to MetricsFilter.

Nova's ``numa.membw.current`` carries per-NUMA-node values; metrics here
are numbers, so the port reports a number under that name.
"""

import pytest

from scheduler.conf.metrics import WeightSetting
from scheduler.filters.metrics_filter import MetricsFilter
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import make_conf
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import passes

CASES = [
    Case("test_metrics_filter_pass", True,
         host={"metrics": {"cpu.frequency": 1000,
                           "numa.membw.current": 53}},
         options={"metrics.weight_setting": WeightSetting()(
             "cpu.frequency=1, numa.membw.current=2")}),
    Case("test_metrics_filter_missing_metrics", False,
         host={"metrics": {"cpu.frequency": 1000}},
         options={"metrics.weight_setting": WeightSetting()(
             "foo=1, bar=2")}),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_metrics_filter(case):
    assert passes(MetricsFilter, nova_host(**case.host), nova_request(),
                  make_conf(case.options)) is case.expected
