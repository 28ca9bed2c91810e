"""ComputeCapabilitiesFilter where it follows Nova: unscoped keys that
name no host attribute are ignored (with a warning), integers compare as
integers, ``hw:maxphysaddr_bits`` is read; and where it is stricter: a
malformed operator is an InvalidExtraSpec naming the key."""

import pytest
from oslo_config import cfg

import scheduler.conf
from scheduler.filters import compute_capabilities_filter
from scheduler.filters import json_filter
from scheduler.filters import nova_names
from scheduler.request.extra_specs import InvalidExtraSpec
from scheduler.request.spec import RequestSpec
from tests.fakes import make_host


@pytest.fixture
def capabilities() -> compute_capabilities_filter.ComputeCapabilitiesFilter:
    conf = cfg.ConfigOpts()
    scheduler.conf.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    return compute_capabilities_filter.ComputeCapabilitiesFilter(conf)


def make_spec(extra_specs: dict) -> RequestSpec:
    return RequestSpec.from_dict({"flavor": {
        "name": "m1", "vcpus": 1, "memory_mb": 512, "root_gb": 1,
        "extra_specs": extra_specs}})


@pytest.mark.parametrize("key", ["trust", "XXYY", "free_disk_mbs",
                                 "metrics", "consume"])
def test_capabilities_ignores_unscoped_key_naming_no_attribute(
        capabilities, key):
    # As Nova: such a key is some other consumer's (or an old flavor's),
    # so rejecting every host for it would make the flavor unusable.
    host = make_host(cpu_info={"arch": "x86_64"})
    spec = make_spec({key: "s== x86_64"})
    assert not capabilities.applies(spec)
    assert capabilities.reject(host, spec) is None
    [warning] = capabilities.warnings(spec)
    assert warning.startswith(f"extra spec {key}='s== x86_64' ignored")


@pytest.mark.parametrize(("extra_specs", "passes"), [
    # 100 GB, 40 claimed, disk_allocation_ratio 1.0: 60 GB free.
    ({"free_disk_mb": str(60 * 1024)}, True),
    ({"free_disk_mb": "1"}, False),
    ({"free_disk_mb": ">= 61440"}, True),
    ({"capabilities:free_disk_mb": ">= 61441"}, False),
    ({"disk_mb_used": str(40 * 1024)}, True),
    ({"total_usable_ram_mb": ">= 16384", "vcpus_total": "= 8"}, True),
    ({"capabilities:local_gb": "<= 99"}, False),
])
def test_capabilities_reads_novas_host_state_names(capabilities, extra_specs,
                                                   passes):
    # As Nova compares them, rather than ignoring them as unknown keys.
    host = make_host(disk_gb_claimed=40)
    spec = make_spec(extra_specs)
    assert capabilities.warnings(spec) == []
    assert (capabilities.reject(host, spec) is None) is passes


def test_capabilities_and_json_filter_read_novas_names_alike():
    # One mapping serves both filters: a Nova name reads the same value.
    host = make_host(disk_gb_claimed=40, vcpus_claimed=3)
    for name, read in nova_names.NOVA_NAMES.items():
        assert json_filter._VARIABLES[name] is read
        assert compute_capabilities_filter.lookup(host, (name,)) == read(host)


def test_capabilities_unscoped_warning_suggests_attribute(capabilities):
    [warning] = capabilities.warnings(make_spec({"vcpu": ">= 8"}))
    assert warning.endswith("did you mean vcpus?")
    assert capabilities.warnings(make_spec({"vcpus": ">= 8"})) == []


def test_capabilities_unscoped_malformed_value_of_ignored_key_passes(
        capabilities):
    # Not this filter's key, so not its grammar either.
    spec = make_spec({"XXYY": "s=="})
    capabilities.validate_request(spec)
    assert capabilities.reject(make_host(), spec) is None


@pytest.mark.parametrize(("key", "value"), [
    ("capabilities:cpu_info:arch", "s== "),
    ("capabilities:cpu_info:arch", "s==   "),
    ("capabilities:cpu_info:arch", "s=== x86_64"),
    ("capabilities:cpu_info:arch", "s!== x86_64"),
    ("capabilities:cpu_info:arch", "s=x86_64"),
    ("capabilities:cpu_info:arch", "s<> x86_64"),
    ("cpu_info", "s== "),
    ("hw:maxphysaddr_bits", "many"),
])
def test_capabilities_malformed_operator_is_invalid_request(
        capabilities, key, value):
    with pytest.raises(InvalidExtraSpec) as info:
        capabilities.validate_request(make_spec({key: value}))
    assert info.value.key == key
    assert key in str(info.value)


@pytest.mark.parametrize(("claimed", "value", "passes"), [
    (16384, "0", True), (16384, "s== 0", True), (16384, "0.0", False),
    (0, "16384", True), (8192, "s== 8192", True),
])
def test_capabilities_free_ram_mb_compares_as_integer(
        capabilities, claimed, value, passes):
    # Nova's free_ram_mb is an integer: "0", never "0.0".
    host = make_host(memory_mb=16384, memory_mb_claimed=claimed)
    rejection = capabilities.reject(
        host, make_spec({"capabilities:free_ram_mb": value}))
    assert (rejection is None) is passes


@pytest.mark.parametrize(("bits", "passes"), [(42, True), (46, True),
                                              (20, False), (None, False)])
def test_capabilities_maxphysaddr_bits(capabilities, bits, passes):
    cpu_info = {} if bits is None else {"maxphysaddr": {"bits": bits}}
    rejection = capabilities.reject(make_host(cpu_info=cpu_info), make_spec(
        {"hw:maxphysaddr_bits": "42"}))
    assert (rejection is None) is passes
