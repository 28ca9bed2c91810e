"""Properties behind the Nova alignment (issue 18): host names match
whatever their case, unscoped keys that name no host attribute change
nothing, and no instance is larger than its node, each in the column
form and the per-host form alike (``support.passing`` compares them)."""

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler.filters import compute_capabilities_filter
from scheduler.filters.compute_capabilities_filter import (
    ComputeCapabilitiesFilter,
)
from scheduler.filters.core_filter import CoreFilter
from scheduler.filters.disk_filter import DiskFilter
from scheduler.filters.ignore_hosts_filter import IgnoreHostsFilter
from scheduler.filters.nova_names import NOVA_NAMES
from scheduler.filters.pin_to_host_filter import PinToHostFilter
from scheduler.filters.ram_filter import RamFilter
from scheduler.hosts.state import HostState
from tests.unit.nova_peer.support import make_conf
from tests.unit.nova_peer.support import nova_host
from tests.unit.nova_peer.support import nova_request
from tests.unit.nova_peer.support import passing

PROPERTY = settings(max_examples=100, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

# Built once: a ConfigOpts costs more than a filter's verdicts.
CONF = make_conf()

# Host names as deployments write them, and letters whose case mapping
# is not one to one (Turkish dotted and dotless i excepted: no case
# folding matches them both ways, and DNS names are ASCII).
name_text = st.text(
    st.sampled_from("abcxyzABCXYZ019-_.ßǅΣσς"), min_size=1, max_size=12)


def _recase(name: str, pattern: list[bool]) -> str:
    return "".join(
        (char.upper() if upper else char.lower())
        for char, upper in zip(name, pattern + [False] * len(name),
                               strict=False))


fleets = st.lists(st.tuples(name_text, name_text), min_size=1, max_size=6,
                  unique_by=lambda pair: pair[0].casefold())


@PROPERTY
@given(fleet=fleets, data=st.data())
def test_host_and_node_names_match_whatever_their_case(fleet, data):
    hosts = [nova_host(host, node) for host, node in fleet]
    chosen = data.draw(st.lists(st.sampled_from(fleet), max_size=3))
    patterns = data.draw(st.lists(st.booleans(), max_size=12))

    def exact(field: str, names: list[str]) -> list[bool]:
        return passing(PinToHostFilter if field != "ignore_hosts"
                       else IgnoreHostsFilter, hosts,
                       nova_request(**{field: names}), CONF)

    for field, index in (("force_hosts", 0), ("ignore_hosts", 0),
                         ("force_nodes", 1)):
        names = [pair[index] for pair in chosen]
        recased = [_recase(name, patterns) for name in names]
        assert exact(field, recased) == exact(field, names), field
        # And the exact names do what they say.
        wanted = {name.casefold() for name in names}
        attribute = "host" if index == 0 else "nodename"
        matched = [getattr(host, attribute).casefold() in wanted
                   for host in hosts]
        expected = ([not m for m in matched] if field == "ignore_hosts"
                    else matched if names else [True] * len(hosts))
        assert exact(field, names) == expected, field


_KNOWN = (compute_capabilities_filter._ATTRIBUTES
          | set(NOVA_NAMES))

unknown_keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,15}",
                             fullmatch=True).filter(
    lambda key: key not in _KNOWN)

# Anything, malformed operators included: the key is not the filter's.
any_values = st.text(st.sampled_from("sS=<>!in 0123abc-"), max_size=10)

known_specs = st.dictionaries(
    st.sampled_from(("capabilities:vcpus", "vcpus",
                     "capabilities:cpu_info:arch", "free_ram_mb")),
    st.sampled_from((">= 4", "= 8", "s== x86_64", "x86_64", "<= 4096")),
    max_size=2)

hosts = st.builds(
    lambda vcpus, ram, arch: nova_host(
        vcpus_total=vcpus, free_ram_mb=ram, cpu_info={"arch": arch}),
    st.sampled_from((1, 4, 8, 16)), st.sampled_from((0, 1024, 8192)),
    st.sampled_from(("x86_64", "aarch64")))


@PROPERTY
@given(fleet=st.lists(hosts, min_size=1, max_size=4), known=known_specs,
       unknown=st.dictionaries(unknown_keys, any_values, min_size=1,
                               max_size=3))
def test_unscoped_keys_naming_no_attribute_change_nothing(fleet, known,
                                                          unknown):
    with_unknown = passing(ComputeCapabilitiesFilter, fleet,
                           nova_request(extra_specs={**known, **unknown}),
                           CONF)
    assert with_unknown == passing(ComputeCapabilitiesFilter, fleet,
                                   nova_request(extra_specs=known), CONF)
    warnings = ComputeCapabilitiesFilter(None).warnings(
        nova_request(extra_specs={**known, **unknown}))
    assert len(warnings) == len(unknown)
    for key, warning in zip(sorted(unknown), warnings, strict=True):
        assert warning.startswith(f"extra spec {key}=")


totals = st.sampled_from((0, 1, 2, 7, 512, 1024))
claims = st.sampled_from((0, 1, 3, 512, 2048))
ratios = st.sampled_from((0.5, 1.0, 1.5, 2.0, 16.0))
sizes = st.sampled_from((0, 1, 2, 8, 512, 1024, 2048))

capacity_hosts = st.builds(
    lambda total, claimed, ratio, index: HostState(
        node_id=index, uuid=f"u{index}", host=f"h{index}",
        nodename=f"n{index}", vcpus=total, memory_mb=total, disk_gb=total,
        vcpus_claimed=claimed, memory_mb_claimed=claimed,
        disk_gb_claimed=claimed, cpu_allocation_ratio=ratio,
        ram_allocation_ratio=ratio, disk_allocation_ratio=ratio),
    totals, claims, ratios, st.integers(0, 10**6))


@PROPERTY
@given(fleet=st.lists(capacity_hosts, min_size=1, max_size=6), size=sizes)
def test_no_instance_larger_than_its_node(fleet, size):
    request = nova_request(memory_mb=size, vcpus=size, root_gb=size)
    for filter_class, free, total in (
            (RamFilter, "free_ram_mb", "memory_mb"),
            (CoreFilter, "free_vcpus", "vcpus"),
            (DiskFilter, "free_disk_gb", "disk_gb")):
        verdicts = passing(filter_class, fleet, request, CONF)
        assert verdicts == [
            size <= 0 or (size <= getattr(host, free)
                          and size <= getattr(host, total))
            for host in fleet], filter_class.__name__
        for host, verdict in zip(fleet, verdicts, strict=True):
            if not verdict:
                rejection = filter_class(None).reject(host, request)
                larger = size > getattr(host, total) and size <= getattr(
                    host, free)
                assert rejection.reason.startswith(
                    "instance larger than" if larger else "insufficient")
