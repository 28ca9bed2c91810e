"""Hosts with a cpu.percent history, for the load-aware weighers' tests."""

from oslo_config import cfg

from scheduler.conf import metrics as metrics_conf
from scheduler.hosts.state import HostState
from scheduler.request.spec import RequestSpec
from tests.fakes import host_with_cpu_history


def loaded_host(name: str, values: list[float], vcpus: int = 8,
                **fields) -> HostState:
    """A host of ``vcpus`` whose cpu.percent reports, one a minute, were
    ``values``, the last one now."""
    return host_with_cpu_history(values, name, vcpus=vcpus, **fields)


def spec(vcpus: int = 2, memory_mb: int = 2048) -> RequestSpec:
    return RequestSpec.from_dict({"flavor": {
        "name": "m1", "vcpus": vcpus, "memory_mb": memory_mb,
        "root_gb": 1}})


def clear_metrics_overrides(conf: cfg.ConfigOpts) -> None:
    """Private ConfigOpts share the module-level [metrics] group,
    overrides included: a test's override would leak into the next."""
    for opt in metrics_conf.metrics_opts + metrics_conf.load_opts:
        conf.clear_override(opt.name, "metrics")
