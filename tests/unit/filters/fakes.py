"""Helpers shared by the filter tests: request specs, host states and a
filter check."""

import datetime

from oslo_config import cfg

import scheduler.conf
from scheduler.filters import Rejection
from scheduler.filters import affinity_filter
from scheduler.filters import availability_zone_filter
from scheduler.filters import cluster_filter
from scheduler.filters import compute_filter
from scheduler.filters import core_filter
from scheduler.filters import disk_filter
from scheduler.filters import ignore_hosts_filter
from scheduler.filters import network_filter
from scheduler.filters import num_instances_filter
from scheduler.filters import pin_to_host_filter
from scheduler.filters import ram_filter
from scheduler.hosts.state import HostState
from scheduler.request.spec import RequestSpec

#: The time the filters' tests pin the clock to (``frozen_now``).
NOW = datetime.datetime(2024, 5, 1, 12, 0, 0)

OUR_FILTERS = {
    "ComputeFilter": compute_filter.ComputeFilter,
    "RamFilter": ram_filter.RamFilter,
    "CoreFilter": core_filter.CoreFilter,
    "DiskFilter": disk_filter.DiskFilter,
    "AvailabilityZoneFilter":
        availability_zone_filter.AvailabilityZoneFilter,
    "ClusterFilter": cluster_filter.ClusterFilter,
    "NetworkFilter": network_filter.NetworkFilter,
    "PinToHostFilter": pin_to_host_filter.PinToHostFilter,
    "IgnoreHostsFilter": ignore_hosts_filter.IgnoreHostsFilter,
    "NumInstancesFilter": num_instances_filter.NumInstancesFilter,
    "SameHostFilter": affinity_filter.SameHostFilter,
    "DifferentHostFilter": affinity_filter.DifferentHostFilter,
    "ServerGroupAffinityFilter": affinity_filter.ServerGroupAffinityFilter,
    "ServerGroupAntiAffinityFilter":
        affinity_filter.ServerGroupAntiAffinityFilter,
}


def plain_conf() -> cfg.ConfigOpts:
    """A ConfigOpts with the scheduler's options and their defaults."""
    conf = cfg.ConfigOpts()
    scheduler.conf.register_opts(conf)
    conf([])
    return conf


def make_spec(flavor: dict | None = None, **fields) -> RequestSpec:
    spec = {"flavor": {"vcpus": 1, "memory_mb": 512, "root_gb": 1,
                       **(flavor or {})}}
    spec.update(fields)
    return RequestSpec.from_dict(spec)


def check(conf, name: str, host: HostState,
          spec: RequestSpec) -> Rejection | None:
    return OUR_FILTERS[name](conf).reject(host, spec)


UUID_A = "aaaaaaaa-0000-0000-0000-000000000001"


def reason(conf, name: str, host: HostState,
           spec: RequestSpec) -> str | None:
    rejection = check(conf, name, host, spec)
    return rejection.reason if rejection else None


MAX_AGE = 300


def spec_for(extra_specs: dict | None = None, hints: dict | None = None,
             **flavor) -> RequestSpec:
    """A one-instance request of a flavor with ``extra_specs`` and
    scheduler ``hints`` (the spec filters' tests)."""
    return RequestSpec.from_dict({
        "flavor": {"name": "m1", "vcpus": 1, "memory_mb": 512,
                   "root_gb": 1, "extra_specs": extra_specs or {}, **flavor},
        "scheduler_hints": hints or {},
    })


CPU_INFO = {
    "arch": "x86_64",
    "vendor": "Intel",
    "model": "Xeon Gold 6230",
    "features": ["avx", "avx2", "sse4_2"],
    "topology": {"sockets": 2, "cores": 20, "threads": 2},
}
