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
from sqlalchemy import exc as sa_exc

from scheduler import exception
from scheduler.common import suggest
from scheduler.db import api as db_api
from scheduler.db import schema
from scheduler.hosts import reported_metrics
from scheduler.hosts.cache.manager import HostManager
from scheduler.policies import cluster as cluster_policy

WEIGHER = "MetricsWeigher"
EXAMPLE = "memory.free=1e-9, cpu.percent=-1.0"


def _setting(conf: cfg.ConfigOpts) -> str:
    return ", ".join(f"{name}={ratio:g}"
                     for name, ratio in conf.metrics.weight_setting)


def _weigher_users(conf: cfg.ConfigOpts) -> list[str]:
    """Where MetricsWeigher is enabled: ``[filter_scheduler]
    weight_classes`` and the weighers of the cluster policies in use."""
    users = []
    if WEIGHER in conf.filter_scheduler.weight_classes:
        users.append("[filter_scheduler] weight_classes")
    try:
        policies = cluster_policy.load_policies(conf)
    except exception.ConfigError:
        # Reported by the cluster policy check.
        return users
    users += [f"[{policy.group}] weighers"
              for policy in policies.policies.values()
              if any(name == WEIGHER for name, _ in policy.weighers)]
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
                      ) -> Iterator[exception.ConfigError]:
    """Each weight_setting metric that no host reports, with the closest
    reported name; ``notes`` says why the check was skipped, if it was."""
    wanted = [name for name, _ in conf.metrics.weight_setting]
    if not wanted:
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
    reported = {m.name for m in reported_metrics.reported_metrics(hosts)}
    for name in wanted:
        if name not in reported:
            yield exception.ConfigError(
                "metrics", "weight_setting", name,
                f"no host reports {name} ({len(hosts)} hosts, "
                f"{len(reported)} metrics: 'scheduler-manage metrics "
                "list')" + suggest.did_you_mean(name, reported))
