"""Nova's ComputeCapabilitiesFilter tests (nova/tests/unit/scheduler/
filters/test_compute_capabilities_filters.py), ported.

Nova's fake host has 1024 MB free and whatever the test adds, including
a ``stats`` dict; a node here has no stats (``host-attributes``), and
its ``cpu_info`` is a mapping rather than JSON text
(``cpu-info-mapping``). ``REFUSED``: the request is refused naming the
key (InvalidExtraSpec) where Nova matched no host.
"""

import json

import pytest

from scheduler.filters.compute_capabilities_filter import (
    ComputeCapabilitiesFilter,
)
from scheduler.request.extra_specs import InvalidExtraSpec
from tests.unit.nova_peer.support import Case
from tests.unit.nova_peer.support import ids
from tests.unit.nova_peer.support import make_conf
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import passes

REFUSED = "refused"

CORE2DUO = {"vendor": "Intel", "model": "core2duo", "arch": "i686",
            "features": ["lahf_lm", "rdtscp"],
            "topology": {"cores": 1, "threads": 1, "sockets": 1}}

CASES = [
    Case("test_compute_filter_passes_without_extra_specs", True),
    # Nova passed no host at all; a host without the attribute fails.
    Case("test_compute_filter_fails_without_host_state", False,
         request={"capabilities:opts": "1"}),
    Case("test_compute_filter_fails_without_capabilities", False,
         host={"cpu_info": {}},
         request={"capabilities:cpu_info:vendor": "Intel"}),
    Case("test_compute_filter_pass_cpu_info_as_text_type", True,
         host={"cpu_info": CORE2DUO},
         request={"capabilities:cpu_info:vendor": "Intel"}),
    # Nova compared the whole JSON text; a mapping matches by key.
    Case("test_compute_filter_pass_cpu_info_with_backward_compatibility",
         False, host={"cpu_info": CORE2DUO},
         request={"cpu_info": json.dumps(CORE2DUO)},
         differs="cpu-info-mapping"),
    Case("test_compute_filter_fail_cpu_info_with_backward_compatibility",
         REFUSED, host={"cpu_info": CORE2DUO}, request={"cpu_info": ""},
         differs="malformed-extra-spec"),
    Case("test_compute_filter_fail_cpu_info_as_text_type_not_valid", False,
         host={"cpu_info": "cpu_info"},
         request={"capabilities:cpu_info:vendor": "Intel"}),
    Case("test_compute_filter_pass_maxphysaddr_bits", True,
         host={"cpu_info": {"maxphysaddr": {"mode": "emulate",
                                            "bits": 42}}},
         request={"hw:maxphysaddr_bits": "42"}),
    Case("test_compute_filter_fails_maxphysaddr_bits", False,
         host={"cpu_info": {"maxphysaddr": {"mode": "emulate",
                                            "bits": 20}}},
         request={"hw:maxphysaddr_bits": "42"}),
    Case("test_compute_filter_fails_without_maxphysaddr_bits", False,
         host={"cpu_info": {}}, request={"hw:maxphysaddr_bits": "42"}),
    # Unscoped stats keys name no attribute here: ignored, so it passes.
    Case("test_compute_filter_passes_extra_specs_simple", True,
         request={"opt1": "1", "opt2": "2"}, differs="host-attributes"),
    Case("test_compute_filter_fails_extra_specs_simple", True,
         request={"opt1": "1", "opt2": "222"}, differs="host-attributes"),
    Case("test_compute_filter_pass_extra_specs_simple_with_scope", False,
         request={"capabilities:opt1": "1"}, differs="host-attributes"),
    Case("test_compute_filter_pass_extra_specs_same_as_scope", True,
         request={"capabilities": "1"}),
    Case("test_compute_filter_pass_self_defined_specs", True,
         request={"XXYY": "1"}),
    Case("test_compute_filter_extra_specs_simple_with_wrong_scope", True,
         request={"wrong_scope:opt1": "1"}),
    Case("test_compute_filter_extra_specs_pass_multi_level_with_scope",
         False, request={"opt1:a": "1", "capabilities:opt1:b:aa": "2"},
         differs="host-attributes"),
    Case("test_compute_filter_pass_ram_with_backward_compatibility", True,
         request={"free_ram_mb": ">= 300"}),
    Case("test_compute_filter_fail_ram_with_backward_compatibility", False,
         request={"free_ram_mb": "<= 300"}),
    Case("test_compute_filter_pass_cpu_with_backward_compatibility", True,
         request={"vcpus_used": "<= 20"}),
    Case("test_compute_filter_fail_cpu_with_backward_compatibility", False,
         request={"vcpus_used": ">= 20"}),
    Case("test_compute_filter_pass_disk_with_backward_compatibility", True,
         request={"free_disk_mb": "0"}),
    # Nova's HostState name: free_disk_gb * 1024 here, 0 on a host with
    # no disk.
    Case("test_compute_filter_fail_disk_with_backward_compatibility", False,
         request={"free_disk_mb": "1"}),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nova_compute_capabilities_filter(case):
    host = nova_host(free_ram_mb=1024, vcpus_used=0, **case.host)
    request = nova_request(memory_mb=1024, extra_specs=case.request)
    try:
        outcome = passes(ComputeCapabilitiesFilter, host, request)
    except InvalidExtraSpec as e:
        assert e.key in case.request
        outcome = REFUSED
    assert outcome == case.expected


def test_stats_keys_are_warned_about_not_silently_ignored():
    # What replaces Nova's stats lookups for the operator: a warning
    # per ignored key in explain output.
    request = nova_request(extra_specs={"opt1": "1", "opt2": "222"})
    warnings = ComputeCapabilitiesFilter(make_conf()).warnings(request)
    assert [w.split("=")[0] for w in warnings] == [
        "extra spec opt1", "extra spec opt2"]
