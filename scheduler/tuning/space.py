"""What ``scheduler-manage tune --space FILE`` searches, and the
configuration file a point of it makes.

The space is a YAML mapping. Each key names an option, ``group.option``,
or one entry of an option that is a list of named values,
``group.option[name]``: a ``[metrics] weight_setting`` entry
(``metrics.weight_setting[cpu.percent:p95:1h]``), a cluster policy's
weigher factor (``policy:tuned.weighers[MetricsWeigher]``) or balancer
parameter (``policy:tuned.balancer_parameters[HighUtilization]``). Its
value is a range, ``{low: L, high: H}`` (with ``log: true`` or
``step: S``), or ``{choices: [...]}``::

    metrics.weight_setting[cpu.percent]: {low: -2.0, high: 0.0}
    filter_scheduler.ram_weight_multiplier: {low: -1.0, high: 1.0}
    metrics.weight_setting_scale: {choices: [raw, minmax, rank]}

A point of the space is written as a configuration file read after the
baseline's files (``conf_text``): the trial's and the result's alike.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

import optuna
import yaml
from oslo_config import cfg
from oslo_config import types

from scheduler.common import suggest
from scheduler.conf import opts as conf_opts
from scheduler.conf import policies as policy_conf

#: Options holding named values, and what joins a name to its value.
WEIGHT_SETTING = ("metrics", "weight_setting")
_ENTRY_OPTIONS = {"weight_setting": "=", "weighers": ":",
                  "balancer_parameters": ":"}
_KEY = re.compile(r"(?P<group>[^.\[\]]+)\.(?P<option>[^.\[\]]+)"
                  r"(?:\[(?P<entry>[^\[\]]+)\])?")
_RANGE_KEYS = {"low", "high", "log", "step"}


class SpaceError(ValueError):
    """The space file cannot be searched; the message names the key."""


@dataclasses.dataclass(frozen=True)
class Dimension:
    """One searched option or entry, with its Optuna distribution."""

    key: str
    group: str
    option: str
    entry: str | None
    distribution: optuna.distributions.BaseDistribution

    def values(self) -> list[Any]:
        """The extremes of a range, or every choice: what is checked
        before anything is simulated."""
        dist = self.distribution
        if isinstance(dist, optuna.distributions.CategoricalDistribution):
            return list(dist.choices)
        return [dist.low, dist.high]


def read_space(path: str, baseline: cfg.ConfigOpts) -> list[Dimension]:
    """The dimensions of the space file at ``path``, checked against the
    options ``baseline`` knows (its [policy:NAME] groups included);
    raises SpaceError naming the first key that cannot be searched."""
    try:
        with open(path, encoding="utf-8") as stream:
            document = yaml.safe_load(stream)
    except OSError as e:
        raise SpaceError(f"--space {path}: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise SpaceError(f"--space {path}: not YAML: "
                         f"{' '.join(str(e).split())}") from None
    if not isinstance(document, dict) or not document:
        raise SpaceError(f"--space {path}: expected a mapping of options "
                         "to ranges, e.g. 'filter_scheduler."
                         "ram_weight_multiplier: {low: -1.0, high: 1.0}'")
    known = _known_options(baseline)
    return [_dimension(str(key), value, known, path)
            for key, value in document.items()]


def _known_options(conf: cfg.ConfigOpts) -> dict[tuple[str, str], cfg.Opt]:
    known: dict[tuple[str, str], cfg.Opt] = {}
    for group, options in conf_opts.list_opts():
        name = group if isinstance(group, str) else group.name
        known.update(((name, opt.dest), opt) for opt in options)
    for group in policy_conf.policy_group_names(conf):
        known.update(((group, opt.dest), opt)
                     for opt in policy_conf.policy_opts)
    return known


def _dimension(key: str, spec: object, known: Mapping[tuple[str, str],
               cfg.Opt], path: str) -> Dimension:
    where = f"--space {path}: {key}"
    match = _KEY.fullmatch(key)
    if match is None:
        raise SpaceError(f"{where}: expected group.option or "
                         "group.option[entry]")
    group, option, entry = match["group"], match["option"], match["entry"]
    opt = known.get((group, option))
    if opt is None:
        names = [f"{g}.{o}" for g, o in known]
        raise SpaceError(f"{where}: no such option"
                         + suggest.did_you_mean(f"{group}.{option}", names))
    if entry is not None and option not in _ENTRY_OPTIONS:
        raise SpaceError(f"{where}: [{entry}] names an entry, but only "
                         f"{', '.join(sorted(_ENTRY_OPTIONS))} hold named "
                         "entries")
    if not isinstance(spec, dict) or not spec:
        raise SpaceError(f"{where}: expected {{low: L, high: H}} or "
                         "{choices: [...]}")
    if "choices" in spec:
        return Dimension(key, group, option, entry,
                         _choices(where, spec, opt, entry))
    return Dimension(key, group, option, entry,
                     _range(where, spec, opt, entry))


def _choices(where: str, spec: dict, opt: cfg.Opt,
             entry: str | None) -> optuna.distributions.BaseDistribution:
    extra = set(spec) - {"choices"}
    choices = spec["choices"]
    if extra or not isinstance(choices, list) or not choices:
        raise SpaceError(f"{where}: expected {{choices: [a, b, ...]}} "
                         "alone, a non-empty list")
    # Optuna stores plain values: a list option's choice as its text.
    plain = [",".join(map(str, c)) if isinstance(c, list) else c
             for c in choices]
    for choice in plain:
        if entry is None:
            _convert(where, opt, choice)
    return optuna.distributions.CategoricalDistribution(plain)


def _convert(where: str, opt: cfg.Opt, value: object) -> object:
    try:
        return opt.type(format_value(value))
    except (ValueError, TypeError) as e:
        raise SpaceError(f"{where}: {value!r} is not a valid value: "
                         f"{e}") from None


def _range(where: str, spec: dict, opt: cfg.Opt,
           entry: str | None) -> optuna.distributions.BaseDistribution:
    extra = set(spec) - _RANGE_KEYS
    if extra or "low" not in spec or "high" not in spec:
        raise SpaceError(f"{where}: expected low and high (with log or "
                         f"step), or choices; not {', '.join(sorted(extra))}"
                         if extra else f"{where}: expected both low and "
                         "high")
    low, high, step = spec["low"], spec["high"], spec.get("step")
    bounds = [v for v in (low, high, step) if v is not None]
    if any(isinstance(v, bool) or not isinstance(v, int | float)
           for v in bounds):
        raise SpaceError(f"{where}: low, high and step must be numbers, "
                         f"not {low!r}, {high!r}")
    integer = all(isinstance(v, int) for v in bounds)
    if entry is None and not _takes_numbers(opt, low, high):
        raise SpaceError(f"{where}: a range needs a number option; this "
                         "one takes choices")
    if entry is None and isinstance(opt.type, types.Integer) \
            and not integer:
        raise SpaceError(f"{where}: an integer option takes integer low "
                         f"and high, not {low!r}, {high!r}")
    if not low < high:
        raise SpaceError(f"{where}: low {low!r} must be below high "
                         f"{high!r}")
    log = bool(spec.get("log", False))
    if log and (low <= 0 or step is not None):
        raise SpaceError(f"{where}: log needs low > 0 and no step")
    if integer and (entry is not None or isinstance(opt.type,
                                                    types.Integer)):
        return optuna.distributions.IntDistribution(low, high, log=log,
                                                    step=step or 1)
    return optuna.distributions.FloatDistribution(
        float(low), float(high), log=log,
        step=None if step is None else float(step))


def _takes_numbers(opt: cfg.Opt, *bounds: float) -> bool:
    """Whether ``opt`` holds a number (its own types too, such as a
    percentage) that the range's bounds are values of."""
    if isinstance(opt.type, types.Integer | types.Float):
        return True
    try:
        return all(isinstance(opt.type(format_value(b)), int | float)
                   and not isinstance(opt.type(format_value(b)), bool)
                   for b in bounds)
    except (ValueError, TypeError):
        return False


def format_value(value: object) -> str:
    """A value as a configuration file spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _entries(conf: cfg.ConfigOpts, group: str, option: str
             ) -> dict[str, str]:
    """The named entries ``conf`` holds for an entry option."""
    value = conf[group][option] or []
    if (group, option) == WEIGHT_SETTING:
        return {name: format_value(ratio) for name, ratio in value}
    joiner = _ENTRY_OPTIONS[option]
    return dict(item.split(joiner, 1) for item in value if joiner in item)


def option_values(dimensions: list[Dimension], values: Mapping[str, Any],
                  baseline: cfg.ConfigOpts) -> dict[tuple[str, str], str]:
    """Each searched option's text at the point ``values`` (key ->
    value): an entry replaces or adds its name among the entries the
    baseline holds."""
    texts: dict[tuple[str, str], str] = {}
    entries: dict[tuple[str, str], dict[str, str]] = {}
    for dimension in dimensions:
        place = (dimension.group, dimension.option)
        value = values[dimension.key]
        if dimension.entry is None:
            texts[place] = format_value(value)
            continue
        if place not in entries:
            entries[place] = _entries(baseline, *place)
        entries[place][dimension.entry] = format_value(value)
    for (group, option), named in entries.items():
        joiner = _ENTRY_OPTIONS[option]
        separator = ", " if joiner == "=" else ","
        texts[(group, option)] = separator.join(
            f"{name}{joiner}{value}" for name, value in named.items())
    return texts


def conf_text(texts: Mapping[tuple[str, str], str],
              comment: list[str] = ()) -> str:
    """A configuration file setting the options of ``texts``, after
    ``comment`` lines."""
    lines = [f"# {line}" if line else "#" for line in comment]
    groups: dict[str, list[str]] = {}
    for (group, option), text in texts.items():
        groups.setdefault(group, []).append(f"{option} = {text}")
    for group, options in groups.items():
        lines += ["" if lines else None, f"[{group}]", *options]
    return "\n".join(line for line in lines if line is not None) + "\n"


def baseline_point(dimensions: list[Dimension],
                   baseline: cfg.ConfigOpts) -> dict[str, Any]:
    """The baseline's own values of the dimensions that hold them inside
    their range or choices (all of them: the search tries that point
    first, to start from what runs today)."""
    point: dict[str, Any] = {}
    for dimension in dimensions:
        value = _baseline_value(dimension, baseline)
        dist = dimension.distribution
        if isinstance(dist, optuna.distributions.CategoricalDistribution):
            if value in dist.choices:
                point[dimension.key] = value
        elif isinstance(value, int | float) and \
                dist.low <= value <= dist.high:
            point[dimension.key] = (
                int(value) if isinstance(
                    dist, optuna.distributions.IntDistribution) else value)
    return point


def _baseline_value(dimension: Dimension, baseline: cfg.ConfigOpts) -> Any:
    if dimension.entry is not None:
        text = _entries(baseline, dimension.group,
                        dimension.option).get(dimension.entry)
        try:
            return None if text is None else float(text)
        except ValueError:
            return None
    value = baseline[dimension.group][dimension.option]
    return ",".join(map(str, value)) if isinstance(value, list) else value
