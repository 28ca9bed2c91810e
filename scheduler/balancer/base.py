"""The balancer plugin interface and the validation of its parameters.

A balancer is a ``BaseBalancer`` subclass registered in the
``scheduler.balancers`` entry-point namespace under the name a cluster
policy gives in its ``balancer`` option. It declares the parameters it
reads in ``PARAMETERS``; a policy's ``balancer_parameters`` are checked
against them at start-up by ``validate_parameters``.

A balancer only decides what to move and where it may go: it is handed
one cluster's hosts (``HostLoad``) and their utilisation history, and
yields ``Proposal``s, best first. The planner
(``scheduler.placement.balance_planner``) schedules each proposal through the
cluster's filters and weighers, restricted to its destinations, and
claims the first that fits.
"""

import dataclasses
import datetime
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence

from stevedore import driver
from stevedore import exception as stevedore_exception

from scheduler import exception
from scheduler.balancer import history as history_mod
from scheduler.hosts import instance_metrics
from scheduler.hosts import state as hm

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
LOAD_WINDOW = "LoadWindowMinutes"
SAFETY_MARGIN = "SafetyMargin"
COOLDOWN = "MoveCooldownMinutes"
RECURRENCE_WINDOW = "RecurrenceWindowMinutes"

ALL_PARAMETERS = {
    HIGH_UTILIZATION: Parameter(default=80, minimum=50, maximum=99),
    # Below HighUtilization's range, so always below HighUtilization.
    LOW_UTILIZATION: Parameter(default=20, minimum=0, maximum=49),
    DURATION: Parameter(default=2, minimum=1),
    HIGH_VM_COUNT: Parameter(default=10, minimum=0),
    MIGRATION_THRESHOLD: Parameter(default=5, minimum=2),
    # Ten minutes: the newest two or three readings of a node reporting
    # every five minutes, enough to tell a persistent level from one
    # noisy reading. On real (PlanetLab) readings an hour's mean was late
    # on hosts that had just turned hot: fewer hot minutes relieved than
    # even_distribution, where ten minutes relieved as many or more.
    LOAD_WINDOW: Parameter(default=10, minimum=1),
    # Points of cpu.percent under HighUtilization a destination keeps
    # with the instance added; at most 40, so that HighUtilization (>= 50)
    # minus it leaves room for some load.
    SAFETY_MARGIN: Parameter(default=10, minimum=0, maximum=40),
    COOLDOWN: Parameter(default=60, minimum=0),
    # 0: off. Otherwise heat that recurs within this many minutes makes a
    # source as persistent heat does (steady_load).
    RECURRENCE_WINDOW: Parameter(default=0, minimum=0),
}

#: The parameters that are a window of history in minutes: the samples
#: kept must reach back the longest of them.
WINDOW_PARAMETERS = (DURATION, LOAD_WINDOW, RECURRENCE_WINDOW)


MEASURED = "measured"
ASSUMED = "assumed"


@dataclasses.dataclass(frozen=True)
class Instance:
    """An instance a balancer may move, with what it claims and, when its
    node reported it within ``[metrics] max_age``, what it uses."""

    uuid: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    group: str | None = None
    #: Fresh ``instance.cpu.percent`` (% of its own vCPUs); None when not
    #: measured, and then all its vCPUs are assumed busy.
    cpu_percent: float | None = None
    #: Fresh ``instance.memory.used`` (bytes); None when not measured.
    memory_used: float | None = None
    #: When its claim on this host was made (naive UTC): placed here, or
    #: its move here completed. None when not known.
    arrived_at: datetime.datetime | None = None

    @property
    def load_source(self) -> str:
        return ASSUMED if self.cpu_percent is None else MEASURED

    @property
    def load(self) -> float:
        """Busy vCPUs: the measured share of its vCPUs, else all of them
        (the pessimistic guess, as pending claims are counted)."""
        if self.cpu_percent is None:
            return float(self.vcpus)
        # Not capped at its vCPUs: emulator and I/O threads may add more.
        return self.vcpus * max(self.cpu_percent, 0.0) / 100.0

    @property
    def migration_cost(self) -> float:
        """Bytes a live migration copies at least: the memory it uses,
        else the memory it claims."""
        if self.memory_used is not None:
            return self.memory_used
        return self.memory_mb * hm.MIB


def measured(instance: Instance, host: hm.HostState,
             cutoff: datetime.datetime | None,
             window: float | None = None) -> Instance:
    """``instance`` with what ``host``, where it runs, reported of it
    since ``cutoff`` (``hm.stale_before``): stale or unknown entries leave
    its load assumed. With a ``window`` (seconds), a fresh instance's
    load is its mean instance.cpu.percent over that window when the host
    keeps its history (``[metrics] instance_history_window``): its level,
    which is what its move takes away for the next hours, rather than
    one noisy reading."""
    cpu_percent = instance_metrics.instance_metric(
        host, instance.uuid, instance_metrics.CPU_PERCENT, cutoff)
    if cpu_percent is not None and window:
        mean = host.instance_history.statistic(instance.uuid, "mean",
                                               window)
        if mean is not None:
            cpu_percent = mean
    return dataclasses.replace(
        instance, cpu_percent=cpu_percent,
        memory_used=instance_metrics.instance_metric(
            host, instance.uuid, instance_metrics.MEMORY_USED, cutoff))


class MeasuredInstances(Sequence[Instance]):
    """The instances on ``host``, each ``measured()`` on first use.

    A read-only tuple to a balancer. Measuring reads the instance
    entries of the host's report, and a balancer looks at the instances
    of a few hosts only (those it would relieve): the others are counted,
    never measured.
    """

    __slots__ = ("_instances", "_host", "_cutoff", "_window", "_measured")

    def __init__(self, instances: Sequence[Instance], host: hm.HostState,
                 cutoff: datetime.datetime | None,
                 window: float | None = None):
        self._instances = tuple(instances)
        self._host = host
        self._cutoff = cutoff
        self._window = window
        self._measured: tuple[Instance, ...] | None = None

    def _all(self) -> tuple[Instance, ...]:
        if self._measured is None:
            self._measured = tuple(measured(instance, self._host,
                                            self._cutoff, self._window)
                                   for instance in self._instances)
        return self._measured

    def __len__(self) -> int:
        return len(self._instances)

    def __getitem__(self, index):  # type: ignore[override]
        return self._all()[index]

    def __iter__(self) -> Iterator[Instance]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MeasuredInstances):
            other = other._all()
        return isinstance(other, tuple) and self._all() == other

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return repr(self._all())


@dataclasses.dataclass(frozen=True)
class HostLoad:
    """One host of the cluster being balanced, as balancers see it."""

    state: hm.HostState
    #: cpu.percent now: the fresh report, plus the claims made since it
    #: (incoming migrations included), minus the vCPUs of the migrations
    #: leaving; None when the host has no fresh cpu.percent.
    cpu_percent: float | None
    #: Instances on the host that are not already being moved (a tuple,
    #: or ``MeasuredInstances``).
    instances: Sequence[Instance]
    #: Instances the host holds once its migrations are done.
    instance_count: int
    #: False when the host is at its migration limit
    #: (``[migration] max_incoming_per_host``/``max_outgoing_per_host``).
    can_migrate: bool = True

    @property
    def node_id(self) -> int:
        return self.state.node_id

    def share(self, vcpus: float) -> float:
        """cpu.percent that ``vcpus`` busy vCPUs make on this host."""
        if self.state.vcpus <= 0:
            return 100.0
        return 100.0 * vcpus / self.state.vcpus

    def cpu_with(self, instance: Instance) -> float:
        """Estimated cpu.percent after ``instance`` lands here: its
        ``load``, measured or assumed."""
        return (self.cpu_percent or 0.0) + self.share(instance.load)

    def cpu_without(self, instance: Instance) -> float:
        """Estimated cpu.percent once ``instance`` has left."""
        return (self.cpu_percent or 0.0) - self.share(instance.load)


@dataclasses.dataclass(frozen=True)
class Proposal:
    """Move ``instance`` off ``source`` to one of ``destinations``
    (the balancer's candidates; the pipeline picks among them)."""

    source: HostLoad
    instance: Instance
    destinations: tuple[HostLoad, ...]


class BaseBalancer:
    """Base class of balancers.

    ``PARAMETERS`` names the entries of ``ALL_PARAMETERS`` a balancer
    reads; ``params`` holds them typed (``validate_parameters``).
    Subclasses implement ``propose``.
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
        return typed

    def propose(self, hosts: Sequence[HostLoad],
                history: history_mod.UtilizationHistory
                ) -> Iterator[Proposal]:
        """The moves that would improve the cluster, best first; the
        planner makes the first that passes the pipeline and the claim.
        Yields nothing when the cluster is balanced."""
        raise NotImplementedError

    @staticmethod
    def moves(sources: Iterable[HostLoad],
              order: Callable[[HostLoad], Iterable[Instance]],
              receivers: Sequence[HostLoad],
              high: float) -> Iterator[Proposal]:
        """For each of ``sources``, each of its instances in
        ``order(source)``: a proposal to the receivers that stay under
        ``high`` cpu.percent with it, when there is one."""
        for source in sources:
            for instance in order(source):
                destinations = tuple(
                    host for host in receivers if host is not source
                    and host.cpu_with(instance) < high)
                if destinations:
                    yield Proposal(source, instance, destinations)


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
