"""Runs of the simulator one after the other, each on its own scratch
database: what ``scheduler-manage simulate`` and ``tune`` (and the
benchmarks) drive. Each configuration is parsed as the operator's files
are, and simulated by the same engine as the service."""

from __future__ import annotations

import os
import sys
import tempfile

from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler.conf import policies as policy_conf
from scheduler.db import api as db_api
from scheduler.simulation import fleet
from scheduler.simulation import readings
from scheduler.simulation import runner
from scheduler.simulation import trace

PROG = "scheduler-manage"
#: The name of the ``--oracle`` run.
ORACLE = "oracle"


def load_config(path: str | list[str]) -> cfg.ConfigOpts:
    """A configuration of its own for ``path`` (``--compare``), or for
    several files read in order."""
    paths = [path] if isinstance(path, str) else path
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf([arg for p in paths for arg in ("--config-file", p)],
         project="scheduler", prog=PROG, default_config_files=[])
    policy_conf.register_policy_groups(conf)
    return conf


def use_database(conf: cfg.ConfigOpts, scratch: str, index: int) -> None:
    """A scratch SQLite file unless the configuration names a database,
    which must then hold no compute node but simulated ones.

    The scratch file is deleted after the run, so its commits need not
    reach the disk: waiting for that was a fifth of a simulated day.
    """
    location = conf.get_location("connection", "database")
    if location is None or location.location == cfg.Locations.opt_default:
        conf.set_override("connection",
                          f"sqlite:///{scratch}/run{index}.sqlite",
                          group="database")
        conf.set_override("sqlite_synchronous", False, group="database")
        return
    fleet.clear(db_api.get_engine(conf))


class Progress:
    """A progress bar over simulated time on stderr (after 2 s)."""

    def __init__(self, total: float, label: str):
        from tqdm import tqdm

        self.bar = tqdm(total=round(total), desc=label, unit="sim-s",
                        file=sys.stderr, delay=2.0, mininterval=0.5,
                        leave=False, dynamic_ncols=True)
        self.shown = 0.0

    def __call__(self, seconds: float) -> None:
        if seconds - self.shown >= 60.0:
            self.bar.update(round(seconds) - round(self.shown))
            self.shown = seconds

    def close(self) -> None:
        self.bar.close()


def scratch_directory() -> tempfile.TemporaryDirectory:
    """A directory for the scratch databases of simulations, in memory
    (/dev/shm) where the machine has it; removed when its block ends."""
    root = "/dev/shm" if os.path.isdir("/dev/shm") else None
    return tempfile.TemporaryDirectory(prefix="simulate-", dir=root)


def oracle_config(conf: cfg.ConfigOpts) -> cfg.ConfigOpts:
    """A configuration of its own for the ``--oracle`` run: the files of
    ``conf`` (its filters, allocation ratios, database), with no cluster
    policy, so that every node is placed by the oracle's weigher, and
    always its best host (no random pick among a subset)."""
    oracle_conf = load_config(list(conf.config_file))
    oracle_conf.set_override("host_subset_size", 1,
                             group="filter_scheduler")
    oracle_conf.set_override("default_policy", None, group="scheduler")
    oracle_conf.set_override("cluster_policies", {}, group="scheduler")
    return oracle_conf


def simulation_for(name: str, run_conf: cfg.ConfigOpts,
                workload: trace.Workload, settings: runner.Settings,
                runs: list[dict]) -> runner.Simulation:

    if name != ORACLE:
        return runner.Simulation(run_conf, workload, settings)
    from scheduler.simulation import oracle

    matrix, counts = readings.series(workload, settings.seed,
                                     settings.readings,
                                     oracle.slots_of(settings, workload))
    return oracle.OracleSimulation(
        run_conf, workload, settings, matrix, counts,
        hot_threshold=runs[0]["hot_threshold"] if runs
        else runner.DEFAULT_HOT)


def run_all(configs: list[tuple[str, cfg.ConfigOpts]],
            workload: trace.Workload, settings: runner.Settings,
            progress: bool = True, oracle: bool = False
            ) -> tuple[list[dict], list[list]]:
    """Run ``workload`` under each (name, configuration), one after the
    other, each on a scratch database unless it names one, then, with
    ``oracle``, the oracle run (``ORACLE``, on the first configuration's
    files); their JSON figures and cpu.percent samples. Raises
    InvalidRequest naming the configuration whose database holds real
    compute nodes."""

    runs, histories = [], []
    if oracle:
        configs = [*configs, (ORACLE, oracle_config(configs[0][1]))]
    with scratch_directory() as scratch:
        for index, (name, run_conf) in enumerate(configs):
            try:
                use_database(run_conf, scratch, index)
            except exception.InvalidRequest as e:
                raise exception.InvalidRequest(
                    f"configuration {name}: {e}") from None
            simulation = simulation_for(name, run_conf, workload, settings,
                                     runs)
            bar = (Progress(settings.span(workload), name)
                   if progress else None)
            simulation.progress = bar
            try:
                result = simulation.run()
            finally:
                if bar is not None:
                    bar.close()
            runs.append({"config": name, **result})
            histories.append(simulation.figures.cpu_history)
            db_api.dispose_engines()
    return runs, histories
