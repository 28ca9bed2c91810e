"""Options of the [metrics] group: the metrics weigher and its inputs."""

import math

from oslo_config import cfg
from oslo_config import types

from compute_monitor import units
from scheduler.conf import metric_stat


class WeightSetting(types.ConfigType):
    """``name=ratio, name=ratio`` -> list of (metric name, float ratio)."""

    def __init__(self, type_name: str = "weight setting value"):
        super().__init__(type_name=type_name)

    def __call__(self, value):
        if isinstance(value, list):
            return value
        pairs = []
        for item in (p.strip() for p in str(value).split(",")):
            if not item:
                continue
            name, sep, ratio = (s.strip() for s in item.partition("="))
            if not sep:
                raise ValueError(f"{item!r} is not name=ratio")
            try:
                metric_stat.parse(name)
            except ValueError as e:
                raise ValueError(f"{item!r} is not name=ratio with a "
                                 f"valid metric name: {e}") from None
            try:
                number = float(ratio)
            except ValueError:
                raise ValueError(
                    f"ratio {ratio!r} of {name} is not a number "
                    "(expected name=ratio, e.g. cpu.percent=-1.0)") from None
            # A NaN ratio makes every host's weight NaN (removed as
            # "required metric unavailable"), an infinite one sends
            # everything to one host.
            if not math.isfinite(number):
                raise ValueError(
                    f"ratio {ratio!r} of {name} is not a finite number "
                    "(expected name=ratio, e.g. cpu.percent=-1.0)")
            pairs.append((name, number))
        return pairs

    def __repr__(self) -> str:
        return "WeightSetting"

    def _formatter(self, value) -> str:
        if isinstance(value, list):
            return ", ".join(f"{name}={ratio}" for name, ratio in value)
        return str(value)


class Duration(types.ConfigType):
    """``90s``, ``30m``, ``1h`` or plain seconds -> float seconds."""

    def __init__(self, type_name: str = "duration value",
                 zero_is_off: bool = False):
        super().__init__(type_name=type_name)
        #: Whether 0 (switched off) is a value.
        self.zero_is_off = zero_is_off

    def __call__(self, value):
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if self.zero_is_off and str(value).strip() in ("0", "0s", "0m",
                                                       "0h"):
            return 0.0
        return metric_stat.parse_duration(value)

    def __repr__(self) -> str:
        return "Duration"

    def _formatter(self, value) -> str:
        if isinstance(value, int | float):
            return metric_stat.format_duration(value)
        return str(value)


class Percent(types.ConfigType):
    """A finite number from 0 to 100."""

    def __init__(self, type_name: str = "percent value"):
        super().__init__(type_name=type_name)

    def __call__(self, value):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not 0.0 <= number <= 100.0:
            raise ValueError(f"{value!r} is not a number from 0 to 100")
        return number

    def __repr__(self) -> str:
        return "Percent"

    def _formatter(self, value) -> str:
        return f"{float(value):g}"


class ExpectedCpu(types.ConfigType):
    """``vcpus``, ``measured`` or a percent from 0 to 100."""

    WORDS = ("vcpus", "measured")

    def __init__(self, type_name: str = "expected instance cpu value"):
        super().__init__(type_name=type_name)

    def __call__(self, value):
        word = str(value).strip().lower()
        if word in self.WORDS:
            return word
        try:
            percent = float(word)
        except ValueError:
            percent = math.nan
        if not 0.0 <= percent <= 100.0:
            raise ValueError(f"{value!r} is not vcpus, measured or a "
                             "percent from 0 to 100")
        return f"{percent:g}"

    def __repr__(self) -> str:
        return "ExpectedCpu"

    def _formatter(self, value) -> str:
        return str(value)


def _group() -> cfg.OptGroup:
    return cfg.OptGroup(
        "metrics",
        title="Metrics weigher options",
        help="How node metrics reported by compute monitors are weighed.",
    )


def _builtin_metrics() -> str:
    by_unit: dict[str, list[str]] = {}
    per_instance = []
    for name, unit in units.BUILTIN_UNITS.items():
        if name.startswith(units.INSTANCE_PREFIX):
            per_instance.append(f"{name} ({unit})")
        else:
            by_unit.setdefault(unit, []).append(name)
    return ("; ".join(f"{', '.join(names)} ({unit})"
                      for unit, names in by_unit.items())
            # Named, so that nobody tries to weigh them.
            + ". Per instance, read by the balancers and never weighed: "
            + "; ".join(per_instance))


metrics_opts = [
    cfg.Opt(
        "weight_setting",
        type=WeightSetting(),
        default=[],
        help="Metrics to weigh and their ratios, as name=ratio pairs "
        "separated by commas. Read by MetricsWeigher only, which is not "
        "in the default [filter_scheduler] weight_classes: add it there "
        "(or to a cluster policy's weighers). With weight_setting_scale "
        "= minmax (recommended) each metric is scaled over the candidate "
        "hosts first, so the ratios only say how much each matters: "
        "memory.free=1.0, cpu.percent=-1.0, the operator guide's "
        "recommendation, weighs free memory and a quiet CPU equally. With "
        "the default raw scale a host's raw weight is the sum of value x "
        "ratio, each value in its metric's own unit, and the ratios must "
        "also convert units (memory.free=1e-9 for GB). Metrics of the "
        "built-in monitors, with their units: " + _builtin_metrics()
        + ". 'scheduler-manage metrics list' prints every metric the "
        "fleet reports (the file monitor's and plugins' too) with its "
        "unit, sources and how many hosts report it.",
    ),
    cfg.StrOpt(
        "weight_setting_scale",
        default="raw",
        choices=[
            ("raw", "sum(ratio x value), each value in its metric's unit "
             "(Nova's behaviour): the ratios must also convert units, as "
             "memory.free=1e-9 does. resources:<metric>=max|min goals are "
             "each divided by their largest absolute value."),
            ("minmax", "Recommended. Each metric is first scaled over the "
             "candidate hosts, towards the end its ratio prefers: the "
             "best host gets |ratio|, the worst 0, so ratios say only how "
             "much each metric matters (memory.free=1, cpu.percent=-2: "
             "CPU counts twice as much as memory, whatever the units)."),
            ("rank", "Each metric is replaced by the host's rank among the "
             "candidates on it (best n-1, worst 0) times |ratio|: only "
             "the order counts, not how far apart the hosts are."),
        ],
        help="How the metrics of weight_setting (and several "
        "resources:<metric>=max|min goals of a flavor) are put on one "
        "scale before they are summed. A host missing a metric, or "
        "holding a stale one, takes no part in scaling the others.",
    ),
    cfg.BoolOpt(
        "required",
        default=True,
        help="When true, a host missing a metric of weight_setting (or "
        "holding a stale one) is removed; when false it is ranked with "
        "weight_of_unavailable without changing how other hosts compare.",
    ),
    cfg.FloatOpt("weight_multiplier", default=1.0,
                 help="Multiplier of MetricsWeigher."),
    cfg.FloatOpt(
        "weight_of_unavailable",
        default=-10000.0,
        help="Weight added to a host whose metrics are unavailable when "
        "required is false.",
    ),
    cfg.IntOpt(
        "max_age",
        default=300,
        min=0,
        help="Seconds after which a reported metric counts as "
        "unavailable; 0 never expires metrics.",
    ),
    cfg.StrOpt(
        "extra_specs_scope",
        default="resources",
        help="Prefix of the flavor extra specs that constrain and weigh "
        "metrics, e.g. resources:network.rx.bps=<85M.",
    ),
]

#: Load-aware weighing (docs/operator-guide.md, "Load-aware weighing").
load_opts = [
    cfg.Opt(
        "history_window", type=Duration(), default="1h",
        help="How long each node's reports are kept for windowed "
        "statistics (cpu.percent:mean:30m): the longest window an option "
        "may name (config check rejects a longer one); a flavor's "
        "resources: extra spec with a longer window gets the statistic "
        "over what is held. About 32 bytes per report and metric per "
        "host plus 150 per host while a node's reports carry the same "
        "metrics (300 per metric otherwise; at most 720 reports per "
        "metric)."),
    cfg.Opt(
        "instance_history_window", type=Duration(zero_is_off=True),
        default="0",
        help="How long each instance's instance.cpu.percent entries are "
        "kept, so that InstanceLoadWeigher and expected_instance_cpu = "
        "measured use each instance's mean over expected_window rather "
        "than its newest entry. 0 (the default) keeps none: instance "
        "entries are then read only when something reads them; with a "
        "window every report's instance entries are checked and their "
        "instance.cpu.percent read when it arrives. 32 bytes per report "
        "and instance plus about 300 per instance."),
    cfg.Opt(
        "expected_instance_cpu", type=ExpectedCpu(), default="vcpus",
        help="How busy a placed instance is assumed to be until its host "
        "reports it (the share of cpu.percent a pending claim adds, and "
        "the load the load-aware weighers add for the instance being "
        "placed): vcpus (all its vCPUs busy), a percent of its vCPUs "
        "(e.g. 50), or measured: the mean instance.cpu.percent of the "
        "running instances of the same flavor (same vCPUs and memory) "
        "over expected_window, expected_fallback_percent while none is "
        "measured."),
    cfg.Opt("expected_window", type=Duration(), default="1h",
            help="Window of each instance's mean instance.cpu.percent "
            "(expected_instance_cpu = measured, InstanceLoadWeigher), "
            "over what instance_history_window holds."),
    cfg.Opt("expected_fallback_percent", type=Percent(), default=100.0,
            help="Percent of its vCPUs an instance is assumed to keep "
            "busy under expected_instance_cpu = measured while no "
            "instance of its flavor has been measured."),
    cfg.FloatOpt("risk_factor", default=1.0, min=0.0,
                 help="LoadRiskWeigher: weight of the standard deviation "
                 "in mean + risk_factor x stddev of cpu.percent."),
    cfg.Opt("risk_window", type=Duration(), default="1h",
            help="LoadRiskWeigher: window of the mean and stddev."),
    cfg.FloatOpt("load_risk_weight_multiplier", default=1.0,
                 help="Multiplier of LoadRiskWeigher."),
    cfg.Opt("target_cpu_percent", type=Percent(), default=40.0,
            help="TargetLoadWeigher: hosts are filled up to this "
            "cpu.percent (windowed mean plus the new instance's "
            "expected load), then the least loaded is preferred."),
    cfg.Opt("target_window", type=Duration(), default="1h",
            help="TargetLoadWeigher: window of the mean cpu.percent."),
    cfg.FloatOpt("target_load_weight_multiplier", default=1.0,
                 help="Multiplier of TargetLoadWeigher."),
    cfg.FloatOpt("instance_load_risk_factor", default=1.0, min=0.0,
                 help="InstanceLoadWeigher: weight of the spread in "
                 "sum(mean) + instance_load_risk_factor x "
                 "sqrt(sum(stddev^2)) of the instances' busy vCPUs over "
                 "expected_window; 0 weighs the means alone."),
    cfg.FloatOpt("instance_load_weight_multiplier", default=1.0,
                 help="Multiplier of InstanceLoadWeigher."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(_group())
    conf.register_opts(metrics_opts + load_opts, group="metrics")


def list_opts() -> dict:
    return {_group(): metrics_opts + load_opts}
