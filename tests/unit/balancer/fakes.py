"""Helpers shared by the balancer tests: the built-in balancers and a
history of moves."""

import datetime

from scheduler.balancer import history as history_mod
from scheduler.balancer.even_distribution import EvenDistributionBalancer
from scheduler.balancer.even_vm_count import EvenVmCountBalancer
from scheduler.balancer.power_saving import PowerSavingBalancer

T0 = datetime.datetime(2026, 11, 21, 12, 0)


def minutes(count: float) -> datetime.datetime:
    return T0 + datetime.timedelta(minutes=count)


def history(**series: list[float]) -> history_mod.UtilizationHistory:
    """``n<id>=[...]``: one sample a minute, ending at minute 10."""
    samples = {}
    for key, values in series.items():
        start = 10 - (len(values) - 1)
        samples[int(key[1:])] = [
            history_mod.Sample(minutes(start + i), value, 1)
            for i, value in enumerate(values)]
    return history_mod.UtilizationHistory(samples)


def even(**params) -> EvenDistributionBalancer:
    return EvenDistributionBalancer(
        EvenDistributionBalancer.validate_parameters("p", params))


def saving(**params) -> PowerSavingBalancer:
    return PowerSavingBalancer(
        PowerSavingBalancer.validate_parameters("p", params))


def vm_count(**params) -> EvenVmCountBalancer:
    return EvenVmCountBalancer(
        EvenVmCountBalancer.validate_parameters("p", params))
