"""Helpers shared by the host table tests and the example plugin tests:
fleets, requests and their Hypothesis strategies, and the table outcome
to compare."""

import contextlib
import datetime
import math
import random
from collections.abc import Iterator

from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
from oslo_config import cfg

import scheduler.conf
from scheduler import exception
from scheduler.engine import filter_scheduler
from scheduler.filters import availability_zone_filter
from scheduler.filters import cluster_filter
from scheduler.filters import compute_capabilities_filter
from scheduler.filters.compute_filter import ComputeFilter
from scheduler.filters.core_filter import CoreFilter
from scheduler.filters.disk_filter import DiskFilter
from scheduler.filters.metrics_filter import MetricsFilter
from scheduler.filters.num_instances_filter import NumInstancesFilter
from scheduler.filters.ram_filter import RamFilter
from scheduler.filters.resources_threshold_filter import (
    ResourcesThresholdFilter,
)
from scheduler.hosts import state as hm
from scheduler.request.spec import RequestSpec
from scheduler.weights.cpu import CPUWeigher
from scheduler.weights.disk import DiskWeigher
from scheduler.weights.metrics import MetricsWeigher
from scheduler.weights.num_instances import NumInstancesWeigher
from scheduler.weights.ram import RAMWeigher
from scheduler.weights.resources import ResourcesWeigher

NOW = datetime.datetime(2024, 5, 1, 12, 0, 0)


# Derandomised: the same examples on every run.
PROPERTY = settings(max_examples=100, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


# Metrics that pending claims adjust, and one they leave alone.
METRICS = ("cpu.percent", "memory.free", "memory.used", "memory.percent",
           "memory.total", "network.rx.bps")


SERVICE_DOWN_TIMES = (1, 60, 3600)


MAX_AGES = (0, 1, 300)


ZONES = (None, "", "az1", "az2")


CLUSTERS = (None, "", "c1", "c2")


# Sizes from a small set, so that "exactly fits" comes up often.
SIZES = (0, 1, 2, 512, 1024, 2048, 8192)


RATIOS = (0.0, 0.5, 1.0, 1.5, 16.0)


WORDS = ("x86_64", "aarch64", "avx", "avx2", "sse4", "Intel", "8", "True",
         "None", "", "az1", "c1", "net1", "h01")


@contextlib.contextmanager
def configured() -> Iterator[cfg.ConfigOpts]:
    """A private ConfigOpts; its overrides are dropped on exit (the
    module-level OptGroups share them with every ConfigOpts)."""
    conf = cfg.ConfigOpts()
    scheduler.conf.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    try:
        yield conf
    finally:
        conf.reset()


def apply_options(conf: cfg.ConfigOpts, options: dict) -> None:
    for (group, name), value in options.items():
        conf.set_override(name, value, group=group)


def _before_now(seconds: int, microseconds: int) -> datetime.datetime:
    return NOW - datetime.timedelta(seconds=seconds,
                                    microseconds=microseconds)


# Heartbeats and metric reports right at the configured limits (exactly
# that old counts as fresh), a microsecond either side, far off, and in
# the future.
moments = st.builds(
    _before_now,
    st.sampled_from((0, 1, 59, 60, 61, 299, 300, 301, 3599, 3600, 3601,
                     -30)) | st.integers(-10, 10**8),
    st.sampled_from((0, 0, 1, -1)) | st.integers(-10**6, 10**6))


metric_values = (
    st.sampled_from((0, 0.0, 5.0, 50.0, 85e6, 85e6 * (1 + 1e-13), 1.1e9,
                     1024.0, 2500.0, 100.0, -1.0, 2.0**33))
    | st.integers(-10**6, 10**12)
    | st.floats(-1e12, 1e12, allow_nan=False))


metrics = st.dictionaries(
    st.sampled_from(METRICS),
    st.builds(hm.Metric, metric_values, moments, st.just("test")),
    max_size=4)


# A few dozen shapes, drawn whole: equal values in other types (8, 8.0,
# "8", True), lists and dicts where scalars are expected, missing and
# None keys, nesting.
CPU_INFOS = (
    {},
    {"arch": "x86_64", "model": "Intel", "features": ["avx", "avx2"],
     "topology": {"cores": 8, "sockets": 2, "threads": 2}},
    {"arch": "x86_64", "model": "Intel", "features": ["avx", "avx2"],
     "topology": {"cores": 8, "sockets": 2, "threads": 2}},
    {"arch": "x86_64", "features": ["avx2", "avx"],
     "topology": {"threads": 2, "cores": 8.0}},
    {"arch": "aarch64", "features": [], "topology": {"cores": "8"}},
    {"arch": "aarch64", "features": "avx2 sse4", "topology": {"cores": 4}},
    {"arch": None, "features": None, "topology": None},
    {"arch": ["x86_64", "i686"], "features": {"avx": True, "sse4": 1},
     "topology": {"cores": True}},
    {"arch": 8, "features": ["avx", ["avx2"], 8], "topology": [8, 4]},
    {"arch": "", "model": "EPYC", "topology": {"cores": -1, "x": {}}},
    {"arch": "x86_64", "topology": {"cores": 16, "x": {"cores": 2}}},
    {"x": {"cores": [2, 2.0, "2"]}, "features": ["sse4"]},
    {"features": ["avx", "avx2", "sse4"], "topology": {"cores": 0.0}},
    {"features": ["avx", "avx2", "sse4"], "topology": {"cores": -0.0}},
    {"arch": "True", "model": 2.5, "topology": {"cores": 64}},
)


cpu_infos = st.sampled_from(CPU_INFOS)


def _hosts(size: int):
    return st.sampled_from(SIZES) | st.integers(0, size)


def _ratios():
    return st.sampled_from(RATIOS) | st.floats(0, 20)


# Built once: strategies made afresh for every draw cost more than the
# draws.
host_states = st.builds(
    hm.HostState,
    node_id=st.just(0), uuid=st.just(""),
    # Shared host names: ties broken by nodename.
    host=st.sampled_from(("h01", "h02", "h03")),
    nodename=st.just(""),
    cluster=st.sampled_from(CLUSTERS),
    availability_zone=st.sampled_from(ZONES),
    vcpus=st.sampled_from((0, 1, 2, 4, 8, 64)),
    memory_mb=_hosts(10**6),
    disk_gb=_hosts(10**4),
    cpu_allocation_ratio=_ratios(),
    ram_allocation_ratio=_ratios(),
    disk_allocation_ratio=_ratios(),
    vcpus_claimed=st.sampled_from((0, 1, 2, 8, 70)),
    memory_mb_claimed=st.sampled_from(SIZES),
    disk_gb_claimed=st.sampled_from(SIZES),
    vcpus_pending=st.sampled_from((0, 0, 1, 4)),
    memory_mb_pending=st.sampled_from((0, 0, 512, 4096)),
    cpu_info=cpu_infos,
    networks=st.frozensets(st.sampled_from(("net1", "net2"))),
    metrics=metrics,
    bad_metrics=st.frozensets(st.sampled_from(METRICS), max_size=2),
    disabled=st.booleans(),
    disabled_reason=st.sampled_from((None, "maintenance")),
    updated_at=st.none() | moments,
    instances=st.sets(st.sampled_from(("i-1", "i-2", "i-3", "i-4"))),
    instance_groups=st.sets(st.sampled_from(("g1", "g2"))),
)


def _numbered(hosts: list[hm.HostState]) -> list[hm.HostState]:
    for index, host in enumerate(hosts):
        host.node_id = index
        host.uuid = f"uuid-{index}"
        host.nodename = f"node-{index:02d}"
    return hosts


def fleets(max_size: int = 6):
    return st.lists(host_states, max_size=max_size).map(_numbered)


THRESHOLD_OPS = ("<", "<=", ">", ">=", "=", "==", "!=")


QUANTITIES = ("0", "5", "50", "100", "85M", "85000000", "1.1G", "1Ki",
              "2.5e3", "-1", " 8Gi ")


resource_values = (
    st.sampled_from(("max", "min", " MAX ", "Min"))
    | st.builds("{}{}".format, st.sampled_from(THRESHOLD_OPS),
                st.sampled_from(QUANTITIES)))


CAPABILITY_KEYS = (
    "capabilities:cpu_info:arch", "capabilities:cpu_info:features",
    "capabilities:cpu_info:topology:cores", "capabilities:cpu_info:topology",
    "capabilities:cpu_info", "capabilities:cpu_info:x:cores",
    "capabilities:vcpus", "capabilities:vcpus_total",
    "capabilities:hypervisor_hostname", "capabilities:cluster",
    "capabilities:availability_zone", "capabilities:networks",
    "capabilities:free_ram_mb", "capabilities:instances",
    "capabilities:disabled", "capabilities:metrics", "capabilities:nope",
    # Unscoped: attributes, and names no host has (ignored, as in Nova).
    "vcpus", "cpu_info", "free_ram_mb", "XXYY", "free_disk_mb")


NUMBERS = ("0", "1", "2", "4", "8", "8.0", "16", "-1", "1e3")


capability_values = st.one_of(
    st.sampled_from(WORDS[:-4] + NUMBERS).filter(bool),
    st.builds("{} {}".format, st.sampled_from(("=", "==", "!=", ">=",
                                               "<=")),
              st.sampled_from(NUMBERS)),
    st.builds("{} {}".format,
              st.sampled_from(("s==", "s!=", "s<", "s<=", "s>", "s>=")),
              # "s== " without operand is an InvalidExtraSpec.
              st.sampled_from(WORDS).filter(bool)),
    st.builds("<in> {}".format, st.sampled_from(WORDS).filter(bool)),
    st.builds(lambda words: "<all-in> " + " ".join(words),
              st.lists(st.sampled_from(WORDS).filter(bool), min_size=1,
                       max_size=3)),
    st.builds(lambda words: "<or> " + " <or> ".join(words),
              st.lists(st.sampled_from(WORDS).filter(bool), min_size=1,
                       max_size=3)),
)


extra_specs = st.builds(
    lambda resources, capabilities: {**resources, **capabilities},
    st.dictionaries(st.sampled_from([f"resources:{m}" for m in METRICS]),
                    resource_values, max_size=3),
    st.dictionaries(st.sampled_from(CAPABILITY_KEYS), capability_values,
                    max_size=3))


spec_dicts = st.fixed_dictionaries({
    "flavor": st.fixed_dictionaries({
        "name": st.just("m1"),
        "vcpus": st.sampled_from((0, 1, 2, 4, 8)),
        "memory_mb": st.sampled_from(SIZES),
        "root_gb": st.sampled_from((0, 1, 10, 1024)),
        "ephemeral_gb": st.sampled_from((0, 0, 1, 1024)),
        "extra_specs": extra_specs,
    }),
    "availability_zone": st.sampled_from(ZONES),
    "cluster": st.sampled_from(CLUSTERS),
})


weight_settings = st.lists(
    st.tuples(st.sampled_from(METRICS),
              st.sampled_from((-1.0, 0.0, 0.5, 1.0, 2.0, 1e-6))),
    max_size=3)


# Overrides of the options the column plugins read.
OPTIONS = {
    ("filter_scheduler", "service_down_time"):
        st.sampled_from(SERVICE_DOWN_TIMES),
    ("filter_scheduler", "max_instances_per_host"):
        st.sampled_from((1, 2, 3, 50)),
    ("metrics", "max_age"): st.sampled_from(MAX_AGES),
    ("metrics", "weight_setting"): weight_settings,
    ("metrics", "weight_setting_scale"): st.sampled_from(
        ("raw", "minmax", "rank")),
    ("metrics", "required"): st.booleans(),
}


def request(spec_dict: dict) -> RequestSpec:
    spec = RequestSpec.from_dict(spec_dict)
    spec.start_call(NOW)
    return spec


def as_optional(values) -> list[float | None]:
    return [None if math.isnan(value) else value for value in values]


def _without_columns(scheduler: filter_scheduler.FilterScheduler) -> None:
    """Make every plugin of ``scheduler`` take its per-host path."""
    for host_filter in scheduler.filters:
        host_filter.passes = lambda table, spec: None
    for weigher in scheduler.weighers:
        weigher.raw_column = lambda table, rows, spec: None


def _nan_safe(value):
    return "nan" if isinstance(value, float) and math.isnan(value) \
        else value


def _outcome(scheduler, spec_dict, hosts, uuids):
    """Everything a select() call decided, comparable with ==."""
    spec = RequestSpec.from_dict(spec_dict, instance_uuids=uuids)
    scheduler._rng = random.Random(7)
    try:
        decisions = scheduler.select(spec, hosts)
    except exception.NoValidHost as exc:
        return ("NoValidHost", str(exc))
    return [(
        [(h.host, h.nodename) for h in decision.selected],
        [_nan_safe(w) for w in decision.selected_weights],
        [(r.host.nodename, r.filtered_by, r.reason, r.detail,
          _nan_safe(r.weight),
          {name: (term.raw, term.normalized)
           for name, term in r.weights.items()})
         for r in decision.results],
    ) for decision in decisions]


COLUMN_FILTERS = (
    ComputeFilter, RamFilter, CoreFilter, DiskFilter,
    availability_zone_filter.AvailabilityZoneFilter,
    cluster_filter.ClusterFilter, NumInstancesFilter, MetricsFilter,
    ResourcesThresholdFilter,
    compute_capabilities_filter.ComputeCapabilitiesFilter)


COLUMN_WEIGHERS = (
    RAMWeigher, CPUWeigher, DiskWeigher, NumInstancesWeigher,
    MetricsWeigher, ResourcesWeigher)
