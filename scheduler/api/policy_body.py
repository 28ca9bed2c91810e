"""A scheduling policy as the API reads it: field checks naming the
field, then the one validation of every policy
(``cluster_policy.build_policy``), its ConfigErrors mapped back to the
API's field names."""

import dataclasses
from collections.abc import Mapping

from oslo_config import cfg

from scheduler import exception
from scheduler.api import body
from scheduler.api import errors
from scheduler.policies import cluster as cluster_policy
from scheduler.policies import units as policy_units

FIELDS = ("id", "name", "description", "normalization", "properties",
          "filters", "weights", "balance", "locked", "clusters", "version",
          "based_on")
#: Given back by a GET; a PUT may hold them, unchanged.
READ_ONLY = ("id", "locked", "clusters", "version")
FILTER_FIELDS = ("unit", "unit_id", "position")
WEIGHT_FIELDS = ("unit", "unit_id", "factor")
BALANCE_FIELDS = ("unit", "unit_id")
POSITIONS = (cluster_policy.FIRST, cluster_policy.LAST, None)
# ConfigError options of build_policy -> the API's fields.
_FIELD_OF_OPTION = {"filters": "filters", "weighers": "weights",
                    "normalization": "normalization", "balancer": "balance",
                    "balancer_parameters": "properties"}
# Factors beyond this are typos; they would also overflow the column.
MAX_FACTOR = 1_000_000


@dataclasses.dataclass
class Draft:
    """A policy's editable fields, unit names resolved."""

    name: str
    description: str = ""
    normalization: str | None = None
    properties: dict[str, int] = dataclasses.field(default_factory=dict)
    filters: list[tuple[str, str | None]] = dataclasses.field(
        default_factory=list)
    weights: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    balance: str | None = None

    def options(self) -> dict[str, object]:
        """As a [policy:NAME] group would write it."""
        options: dict[str, object] = {
            "filters": [name + (f":{pos}" if pos else "")
                        for name, pos in self.filters],
            "weighers": [f"{name}:{factor}" for name, factor in self.weights],
            "balancer": self.balance or cluster_policy.NO_BALANCER,
            "balancer_parameters": [f"{k}:{v}"
                                    for k, v in self.properties.items()],
        }
        if self.normalization is not None:
            options["normalization"] = self.normalization
        return options


class Units:
    """The installed units, found by id or name within a type."""

    def __init__(self, disabled: set[str]):
        self.all = policy_units.installed_units()
        self.disabled = disabled
        self._by_key = {}
        for unit in self.all:
            self._by_key[(unit.type, unit.id)] = unit
            self._by_key[(unit.type, unit.name)] = unit

    def find(self, path: str, unit_type: str, key: object
             ) -> policy_units.PolicyUnit:
        body.typed(path, key, str)
        unit = self._by_key.get((unit_type, key))
        if unit is None:
            known = sorted(u.name for u in self.all if u.type == unit_type)
            raise errors.bad_request(
                path, f"no {unit_type} unit {key!r}; expected an id or one "
                f"of {', '.join(known)}")
        if unit.id in self.disabled:
            raise errors.conflict(f"{path}: unit {unit.name} is disabled")
        return unit


def _unit(path: str, item: object, fields: tuple[str, ...],
          unit_type: str, units: Units) -> tuple[policy_units.PolicyUnit,
                                                 Mapping]:
    body.typed(path, item, dict)
    body.check_fields(path, item, fields)
    if "unit" not in item:
        raise errors.bad_request(f"{path}.unit", "required")
    unit = units.find(f"{path}.unit", unit_type, item["unit"])
    if "unit_id" in item and item["unit_id"] != unit.id:
        raise errors.bad_request(f"{path}.unit_id",
                                 "read-only; does not match unit")
    return unit, item


def parse(data: Mapping, units: Units, current: Draft | None = None,
          current_read_only: Mapping | None = None) -> Draft:
    """A Draft from a POST (``current`` None) or PUT body; fields a PUT
    leaves out keep their value."""
    body.check_fields("", data, FIELDS)
    for field in READ_ONLY:
        if field in data and current_read_only is not None and (
                data[field] != current_read_only.get(field)):
            raise errors.bad_request(field, "read-only; leave it out or "
                                     "give back the value a GET gave")
    draft = dataclasses.replace(current) if current else Draft(name="")
    if "name" in data or current is None:
        draft.name = body.text("name", data.get("name"))
    if "description" in data:
        draft.description = body.text("description", data["description"],
                                      max_length=4000, empty=True)
    if "normalization" in data:
        draft.normalization = body.choice(
            "normalization", data["normalization"],
            (*cluster_policy.NORMALIZATIONS, None))
    if "properties" in data:
        props = body.typed("properties", data["properties"], dict)
        draft.properties = {
            k: body.typed(f"properties.{k}", v, int) for k, v in props.items()}
    if "filters" in data:
        items = body.typed("filters", data["filters"], list)
        draft.filters = []
        for i, item in enumerate(items):
            unit, item = _unit(f"filters[{i}]", item, FILTER_FIELDS,
                               policy_units.FILTER, units)
            position = body.choice(f"filters[{i}].position",
                                   item.get("position"), POSITIONS)
            draft.filters.append((unit.name, position))
    if "weights" in data:
        items = body.typed("weights", data["weights"], list)
        draft.weights = []
        for i, item in enumerate(items):
            unit, item = _unit(f"weights[{i}]", item, WEIGHT_FIELDS,
                               policy_units.WEIGHT, units)
            factor = body.typed(f"weights[{i}].factor",
                                item.get("factor", 1), int)
            if abs(factor) > MAX_FACTOR:
                raise errors.bad_request(
                    f"weights[{i}].factor",
                    f"expected an integer from {-MAX_FACTOR} to "
                    f"{MAX_FACTOR}")
            draft.weights.append((unit.name, factor))
    if "balance" in data:
        draft.balance = parse_balance(data["balance"], units)
    return draft


def parse_balance(value: object, units: Units) -> str | None:
    """``{"unit": ...}`` or null; a list is refused: one balancer."""
    if isinstance(value, list):
        raise errors.bad_request("balance", "a policy has at most one "
                                 "balancer: expected {\"unit\": ...} or null")
    if value is None:
        return None
    unit, _ = _unit("balance", value, BALANCE_FIELDS,
                    policy_units.BALANCE, units)
    return unit.name


def validate(conf: cfg.ConfigOpts, draft: Draft
             ) -> cluster_policy.ClusterPolicy:
    """The engine's validation of the policy; 400 naming the field."""
    try:
        return cluster_policy.build_policy(conf, draft.name, draft.options())
    except exception.ConfigError as e:
        raise errors.bad_request(field_of(e), problem_of(e)) from None


def field_of(error: exception.ConfigError) -> str:
    return _FIELD_OF_OPTION.get(error.option, error.option)


def problem_of(error: exception.ConfigError) -> str:
    prefix = (f"invalid value {error.value!r} for [{error.group}] "
              f"{error.option}: ")
    return f"{error.value}: " + str(error).removeprefix(prefix)
