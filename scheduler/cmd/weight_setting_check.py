"""``config check`` on ``[metrics] weight_setting``: set where nothing
reads it, empty where MetricsWeigher weighs it, or naming a metric that no
host reports (a misspelling removes every host under ``required = true``).

The last check is the only one of ``config check`` that reads the
database: the names the fleet reports, nothing written. A database that
cannot be read (not reachable, no schema, a SQLite file that does not
exist) skips it with a note instead of a problem.
"""

from collections.abc import Iterator

from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from scheduler import exception
from scheduler.conf import metric_stat
from scheduler.db import api as db_api
from scheduler.db import schema
from scheduler.hosts import reported_metrics
from scheduler.hosts.cache.manager import HostManager
from scheduler.policies import cluster as cluster_policy

LOG = logging.getLogger(__name__)

WEIGHER = "MetricsWeigher"
EXAMPLE = "memory.free=1e-9, cpu.percent=-1.0"


def _setting(conf: cfg.ConfigOpts) -> str:
    return ", ".join(f"{name}={ratio:g}"
                     for name, ratio in conf.metrics.weight_setting)


def _weigher_users(conf: cfg.ConfigOpts, weigher: str = WEIGHER
                   ) -> list[str]:
    """Where ``weigher`` is enabled: ``[filter_scheduler]
    weight_classes`` and the weighers of the cluster policies in use."""
    users = []
    if weigher in conf.filter_scheduler.weight_classes:
        users.append("[filter_scheduler] weight_classes")
    try:
        policies = cluster_policy.load_policies(conf)
    except exception.ConfigError:
        # Reported by the cluster policy check.
        return users
    users += [f"[{policy.group}] weighers"
              for policy in policies.policies.values()
              if any(name == weigher for name, _ in policy.weighers)]
    return users


def weigher_problems(conf: cfg.ConfigOpts
                     ) -> Iterator[exception.ConfigError]:
    """weight_setting without MetricsWeigher, or the reverse."""
    users = _weigher_users(conf)
    if conf.metrics.weight_setting and not users:
        yield exception.ConfigError(
            "metrics", "weight_setting", _setting(conf),
            f"{WEIGHER}, which weighs these metrics, is in neither "
            "[filter_scheduler] weight_classes nor a cluster policy's "
            f"weighers: add it there, or the setting has no effect")
    elif users and not conf.metrics.weight_setting:
        yield exception.ConfigError(
            "metrics", "weight_setting", "",
            f"empty, while {WEIGHER} is enabled ({', '.join(users)}): it "
            f"weighs nothing; set it, e.g. {EXAMPLE}")


def reported_problems(conf: cfg.ConfigOpts, notes: list[str]
                      ) -> Iterator[tuple[str, str]]:
    """``(name, why)`` for each weight_setting metric that no host
    reports, ``why`` with the closest reported name; ``notes`` says why
    the check was skipped, if it was."""
    if not conf.metrics.weight_setting:
        return
    skipped = "weight_setting metrics not checked against the fleet: "
    try:
        problem = schema.schema_problem(conf, "config check")
        if problem is not None:
            notes.append(skipped + problem)
            return
        hosts = HostManager(conf).host_states()
    except sa_exc.SQLAlchemyError as e:
        notes.append(skipped + f"database error at "
                     f"{db_api.safe_url(conf.database.connection)}: "
                     f"{db_api.one_line(e)}")
        return
    if not hosts:
        notes.append(skipped + "no compute node is registered yet")
        return
    yield from reported_metrics.unreported_weight_metrics(
        conf.metrics.weight_setting, hosts)


def consequence(conf: cfg.ConfigOpts) -> str:
    """What a metric no host reports does to the requests."""
    if conf.metrics.required:
        return (f"with [metrics] required = true, {WEIGHER} removes every "
                "host and every request fails")
    return ("every host is weighed as [metrics] weight_of_unavailable = "
            f"{conf.metrics.weight_of_unavailable:g}")


def warn_unreported(conf: cfg.ConfigOpts) -> None:
    """Start-up's form of ``reported_problems``: one WARNING per metric no
    registered host reports, where MetricsWeigher weighs them."""
    if not _weigher_users(conf):
        return
    notes: list[str] = []
    for _name, why in reported_problems(conf, notes):
        LOG.warning("[metrics] weight_setting: %s; %s", why,
                    consequence(conf))
    for note in notes:
        LOG.info("%s", note)


#: Options naming a window, which the reports held must cover, and the
#: weigher reading each.
WINDOW_OPTIONS = (("risk_window", "LoadRiskWeigher"),
                  ("target_window", "TargetLoadWeigher"))


def window_problems(conf: cfg.ConfigOpts
                    ) -> Iterator[exception.ConfigError]:
    """A window longer than the reports the scheduler keeps (``[metrics]
    history_window`` for a node's metrics, ``instance_history_window``
    for its instances'): the statistic would silently cover less."""
    metrics = conf.metrics
    # Only the windows something reads: a shorter history is no problem
    # for a weigher nobody enabled.
    windows = [(option, getattr(metrics, option), option, "history_window")
               for option, weigher in WINDOW_OPTIONS
               if _weigher_users(conf, weigher)]
    # Without an instance history an instance counts at its newest
    # entry, whatever the window.
    if metrics.instance_history_window and (
            metrics.expected_instance_cpu == "measured"
            or _weigher_users(conf, "InstanceLoadWeigher")):
        windows.append(("expected_window", metrics.expected_window,
                        "expected_window", "instance_history_window"))
    windows += [("weight_setting", metric_stat.parse(name).window, name,
                 "history_window")
                for name, _ in metrics.weight_setting]
    for option, window, value, holder in windows:
        held = getattr(metrics, holder)
        if window > held:
            shown = value if option == "weight_setting" else \
                metric_stat.format_duration(window)
            yield exception.ConfigError(
                "metrics", option, shown,
                f"a window of {metric_stat.format_duration(window)}, "
                f"longer than [metrics] {holder} = "
                f"{metric_stat.format_duration(held)}: raise "
                f"{holder} or shorten the window")


def validate_windows(conf: cfg.ConfigOpts) -> None:
    """Start-up's form of ``window_problems``: the first one raised."""
    for problem in window_problems(conf):
        raise problem
