"""The balancer plugin interface and the validation of its parameters.

A balancer is a ``BaseBalancer`` subclass registered in the
``scheduler.balancers`` entry-point namespace under the name a cluster
policy gives in its ``balancer`` option. It declares the parameters it
reads in ``PARAMETERS``; a policy's ``balancer_parameters`` are checked
against them at start-up by ``validate_parameters``.
"""

import dataclasses

from stevedore import driver
from stevedore import exception as stevedore_exception

from scheduler import exception

NAMESPACE = "scheduler.balancers"


@dataclasses.dataclass(frozen=True)
class Parameter:
    """An integer balancer parameter: its default and inclusive range
    (``maximum`` None: unbounded)."""

    default: int
    minimum: int
    maximum: int | None = None

    @property
    def allowed(self) -> str:
        if self.maximum is None:
            return f"an integer >= {self.minimum}"
        return f"an integer from {self.minimum} to {self.maximum}"


# oVirt's SpmVmGrace is left out: it spares the storage pool manager
# host, which this scheduler has no equivalent of.
HIGH_UTILIZATION = "HighUtilization"
LOW_UTILIZATION = "LowUtilization"
DURATION = "CpuOverCommitDurationMinutes"
HIGH_VM_COUNT = "HighVmCount"
MIGRATION_THRESHOLD = "MigrationThreshold"

ALL_PARAMETERS = {
    HIGH_UTILIZATION: Parameter(default=80, minimum=50, maximum=99),
    LOW_UTILIZATION: Parameter(default=20, minimum=0, maximum=49),
    DURATION: Parameter(default=2, minimum=1),
    HIGH_VM_COUNT: Parameter(default=10, minimum=0),
    MIGRATION_THRESHOLD: Parameter(default=5, minimum=2),
}


class BaseBalancer:
    """Base class of balancers.

    ``PARAMETERS`` names the entries of ``ALL_PARAMETERS`` a balancer
    reads; subclasses implement ``propose``.
    """

    PARAMETERS: tuple[str, ...] = ()

    def __init__(self, params: dict[str, int]):
        self.params = params

    @classmethod
    def validate_parameters(cls, policy: str,
                            params: dict[str, str]) -> dict[str, int]:
        """The typed parameters of ``params`` with defaults filled in.

        Raises ConfigError naming ``policy:<policy>``, the parameter and
        its allowed range for a value that is not an integer, out of
        range or missing a value, and for a parameter this balancer does
        not read.
        """
        group = f"policy:{policy}"
        option = "balancer_parameters"
        typed = {}
        for name, value in params.items():
            if name not in cls.PARAMETERS:
                known = ", ".join(cls.PARAMETERS) or "none"
                raise exception.ConfigError(
                    group, option, f"{name}={value}",
                    f"unknown parameter; expected one of: {known}")
            spec = ALL_PARAMETERS[name]
            number = _as_int(value)
            if (number is None or number < spec.minimum
                    or (spec.maximum is not None and number > spec.maximum)):
                raise exception.ConfigError(
                    group, option, f"{name}={value}", spec.allowed)
            typed[name] = number
        for name in cls.PARAMETERS:
            typed.setdefault(name, ALL_PARAMETERS[name].default)
        low = typed.get(LOW_UTILIZATION)
        high = typed.get(HIGH_UTILIZATION)
        if low is not None and high is not None and low >= high:
            raise exception.ConfigError(
                group, option, f"{LOW_UTILIZATION}={low}",
                f"an integer from 0 to 49 and below "
                f"{HIGH_UTILIZATION} ({high})")
        return typed

    def propose(self, hosts, history, busy):
        """Pick at most one instance to move: see ``scheduler.balancer``
        for the arguments and the answer."""
        raise NotImplementedError


def _as_int(value: str | int) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def balancer_class(name: str) -> type[BaseBalancer]:
    """The balancer class registered as ``name``; KeyError if none is."""
    try:
        manager = driver.DriverManager(NAMESPACE, name, invoke_on_load=False)
    except stevedore_exception.NoMatches as exc:
        raise KeyError(name) from exc
    return manager.driver
