"""Policy units (oVirt's name): every installed filter, weigher and
balancer, as the REST API lists them.

A unit's id is derived from its type and name (uuid5), so that it is the
same on every API node and across restarts, with nothing stored; only
units an administrator disabled have a row (``disabled_policy_units``).
"""

import dataclasses
import functools
import importlib.metadata
import uuid

from scheduler import filters
from scheduler import weights
from scheduler.balancer import base as balancer_base

#: oVirt's unit types, keyed to our entry-point namespaces.
FILTER = "filter"
WEIGHT = "weight"
BALANCE = "load_balancing"
NAMESPACES = {FILTER: filters.NAMESPACE, WEIGHT: weights.NAMESPACE,
              BALANCE: balancer_base.NAMESPACE}
#: The distribution whose units are internal (cannot be disabled).
OWN_DISTRIBUTION = "metrics-scheduler"
# Fixed for ever: changing it would change every unit and config-policy id.
ID_NAMESPACE = uuid.UUID("5a0f0c2e-51c4-4d8e-9f43-0d1ab6a3c917")


@functools.cache
def unit_id(unit_type: str, name: str) -> str:
    return str(uuid.uuid5(ID_NAMESPACE, f"{unit_type}:{name}"))


def config_policy_id(name: str) -> str:
    """The id of a config-file policy (built-in or [policy:NAME])."""
    return str(uuid.uuid5(ID_NAMESPACE, f"policy:{name}"))


@dataclasses.dataclass(frozen=True)
class PolicyUnit:
    id: str
    name: str
    type: str
    description: str
    internal: bool
    #: Balancers: each parameter with its default and allowed values.
    properties: tuple[dict, ...] = ()


def _description(entry_point: importlib.metadata.EntryPoint) -> str:
    try:
        plugin = entry_point.load()
    except Exception as e:  # a third-party import may raise anything
        return f"(the plugin failed to load: {type(e).__name__}: {e})"
    doc = (plugin.__doc__ or "").strip()
    # The first paragraph, on one line.
    return " ".join(doc.split("\n\n")[0].split())


def _properties(unit_type: str,
                entry_point: importlib.metadata.EntryPoint
                ) -> tuple[dict, ...]:
    if unit_type != BALANCE:
        return ()
    try:
        names = entry_point.load().PARAMETERS
    except Exception:  # reported in the description already
        return ()
    props = []
    for name in names:
        spec = balancer_base.ALL_PARAMETERS[name]
        props.append({"name": name, "default": spec.default,
                      "minimum": spec.minimum, "maximum": spec.maximum,
                      "allowed": spec.allowed})
    return tuple(props)


def _internal(entry_point: importlib.metadata.EntryPoint) -> bool:
    dist = getattr(entry_point, "dist", None)
    return dist is not None and dist.name == OWN_DISTRIBUTION


@functools.cache
def _installed() -> tuple[PolicyUnit, ...]:
    return tuple(_scan())


def installed_units() -> list[PolicyUnit]:
    """Every installed unit, by type then name (read once per process:
    plugins installed later need a restart, as for every program)."""
    return list(_installed())


def _scan() -> list[PolicyUnit]:
    """Every installed unit, by type then name. Loads each plugin once
    (for its description); a plugin that fails to load is listed with
    why."""
    units = []
    for unit_type, namespace in NAMESPACES.items():
        seen = set()
        for entry_point in sorted(
                importlib.metadata.entry_points(group=namespace),
                key=lambda ep: ep.name):
            if entry_point.name in seen:
                continue
            seen.add(entry_point.name)
            units.append(PolicyUnit(
                unit_id(unit_type, entry_point.name), entry_point.name,
                unit_type, _description(entry_point),
                _internal(entry_point),
                _properties(unit_type, entry_point)))
    return units
