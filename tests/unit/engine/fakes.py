"""Helpers shared by the engine tests: host states, request specs, a
FilterScheduler and fleets with sick plugins."""

import random

import prometheus_client

from scheduler.db import models
from scheduler.engine import filter_scheduler
from scheduler.hosts import state as hm
from scheduler.request.spec import RequestSpec


def host(name, ram_mb=8192, vcpus=8, disk_gb=100, metrics=None, **kw):
    now = models.utcnow()
    return hm.HostState(
        node_id=hash(name) % 10000, uuid=name, host=name, nodename=name,
        availability_zone="nova", vcpus=vcpus, memory_mb=ram_mb,
        disk_gb=disk_gb, updated_at=now, metrics_updated_at=now,
        metrics={k: hm.Metric(v, now) for k, v in (metrics or {}).items()},
        **kw)


def spec(vcpus=1, ram=1024, disk=10, extra_specs=None, **kw):
    return RequestSpec.from_dict({"flavor": {
        "name": "m1", "vcpus": vcpus, "memory_mb": ram, "root_gb": disk,
        "extra_specs": extra_specs or {}}, **kw})


def scheduler(conf, **overrides):
    for name, value in overrides.items():
        group = "metrics" if name in ("weight_setting", "required") \
            else "filter_scheduler"
        conf.set_override(name, value, group=group)
    return filter_scheduler.FilterScheduler(conf, rng=random.Random(1))


SICK = "sick"


def errors_counted(plugin: str) -> float:
    return prometheus_client.REGISTRY.get_sample_value(
        "scheduler_plugin_errors_total", {"plugin": plugin}) or 0.0


def make(conf, host_filters=(), host_weighers=()):
    conf.set_override("enabled_filters", ["ComputeFilter"],
                      group="filter_scheduler")
    conf.set_override("weight_classes", [], group="filter_scheduler")
    scheduler = filter_scheduler.FilterScheduler(conf, rng=random.Random(1))
    scheduler.filters.extend(host_filters)
    scheduler.weighers.extend(host_weighers)
    # As a Pipeline listing them would: each weigher's factor is 1.
    scheduler._factors.update((w.name, 1.0) for w in host_weighers)
    return scheduler


def fleet():
    return [host("a", ram_mb=4096), host(SICK, ram_mb=16384),
            host("c", ram_mb=8192)]
