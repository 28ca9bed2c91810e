"""``scheduler-manage simulate``: replay a workload against the real
engine and report how well it placed (scheduler.simulation)."""

import json
import math
import os
import sys
import tempfile

from oslo_config import cfg
from oslo_log import log as logging

from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler.cmd import output
from scheduler.common import gc_tuning
from scheduler.conf import cli
from scheduler.conf import policies as policy_conf
from scheduler.db import api as db_api
from scheduler.simulation import fleet
from scheduler.simulation import runner
from scheduler.simulation import trace

PROG = "scheduler-manage"
#: Malformed trace lines shown one by one; the rest are only counted.
SHOWN_SKIPPED = 20
#: Figures of the table, in order.
TABLE_ROWS = ("vms", "placed", "rejected", "hosts_used_peak",
              "hot_host_minutes", "cpu_stddev_mean", "herd_max",
              "migrations", "sim_seconds", "wall_seconds")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "simulate", help="Replay a VM trace against the real scheduler "
        "on simulated nodes and report placement quality.")
    workload = parser.add_mutually_exclusive_group(required=True)
    workload.add_argument("--trace", metavar="FILE",
                          help="Azure Public Dataset vmtable CSV")
    workload.add_argument("--synthetic", type=int, metavar="N",
                          help="N VMs drawn like that dataset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--clusters", type=int, default=1,
                        help="deal the hosts round-robin into this many "
                        "clusters (balancers plan one migration per "
                        "cluster and tick)")
    parser.add_argument("--host-vcpus", type=int, default=32)
    parser.add_argument("--host-memory-mb", type=int, default=131072)
    parser.add_argument("--duration", type=float, metavar="SECONDS",
                        help="simulated seconds (default: the trace's "
                        "span; one day with --synthetic)")
    parser.add_argument("--report-interval", type=float, default=60.0,
                        metavar="SECONDS")
    parser.add_argument("--compare", action="append", default=[],
                        metavar="CONFIG", help="another configuration "
                        "file run on the same workload; repeatable")
    parser.add_argument("--format", choices=("table", "json"),
                        default="table")
    parser.add_argument("--plot", metavar="FILE.png")
    parser.set_defaults(func=simulate)


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return cli.CONFIG_ERROR_EXIT


def load_config(path: str) -> cfg.ConfigOpts:
    """A configuration of its own for ``path`` (``--compare``)."""
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf(["--config-file", path], project="scheduler", prog=PROG,
         default_config_files=[])
    policy_conf.register_policy_groups(conf)
    return conf


def _check(conf: cfg.ConfigOpts, name: str) -> str | None:
    # Here: config check imports oslo.messaging and the service.
    from scheduler.cmd import config_check

    problems = config_check.problems(conf)
    if problems:
        return (f"configuration {name} does not pass config check "
                f"({len(problems)} problem(s)): {problems[0]}")
    return None


def _workload(args) -> trace.Workload:
    if args.synthetic is not None:
        if args.synthetic < 1:
            raise trace.TraceError(f"--synthetic {args.synthetic}: expected "
                                   "at least 1 VM")
        return trace.synthetic(args.synthetic, args.seed,
                               args.duration or trace.DAY)
    workload = trace.read_vmtable(args.trace)
    for number, reason in workload.skipped[:SHOWN_SKIPPED]:
        print(f"{PROG}: {args.trace}:{number}: skipped: {reason}",
              file=sys.stderr)
    if len(workload.skipped) > SHOWN_SKIPPED:
        print(f"{PROG}: {args.trace}: {len(workload.skipped) - SHOWN_SKIPPED}"
              " more malformed line(s), not shown", file=sys.stderr)
    return workload


def _use_database(conf: cfg.ConfigOpts, scratch: str, index: int) -> None:
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


class _Progress:
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


def _bad_arguments(args) -> str | None:
    """What is wrong with the fleet and time arguments, if anything."""
    if args.hosts < 1:
        return f"--hosts {args.hosts}: the fleet needs at least one host"
    if not 1 <= args.clusters <= args.hosts:
        return (f"--clusters {args.clusters}: expected 1 to --hosts "
                f"({args.hosts})")
    if min(args.host_vcpus, args.host_memory_mb) < 1:
        return "--host-vcpus and --host-memory-mb must be positive"
    if not (args.report_interval > 0 and (args.duration is None
                                         or 0 < args.duration < math.inf)):
        return ("--report-interval and --duration must be positive and "
                "finite")
    if args.seed < 0:
        return f"--seed {args.seed}: expected a number >= 0"
    return None


def simulate(conf: cfg.ConfigOpts) -> int:
    args = conf.category
    problem = _bad_arguments(args)
    if problem:
        return _fail(problem)
    configs = [(", ".join(os.path.basename(p) for p in conf.config_file)
                or "default", conf)]
    try:
        configs += [(os.path.basename(path), load_config(path))
                    for path in args.compare]
    except (cfg.Error, OSError, ValueError) as e:
        return _fail(f"--compare: {str(e).splitlines()[0]}")
    for name, run_conf in configs:
        problem = _check(run_conf, name)
        if problem:
            return _fail(problem)
    try:
        workload = _workload(args)
    except trace.TraceError as e:
        return _fail(str(e))
    if not conf.debug:
        # One INFO line per decision would drown the report.
        logging.getLogger("scheduler").logger.setLevel(logging.WARNING)
    settings = runner.Settings(
        fleet=fleet.FleetSpec(args.hosts, args.host_vcpus,
                              args.host_memory_mb, clusters=args.clusters),
        seed=args.seed, report_interval=args.report_interval,
        duration=args.duration)
    # Once start-up is done (scheduler-service does not: see gc_tuning).
    gc_tuning.tune()
    try:
        runs, histories = run_all(configs, workload, settings)
    except exception.InvalidRequest as e:
        return _fail(str(e))
    if workload.skipped:
        print(f"{PROG}: {len(workload.skipped)} malformed trace line(s) "
              "skipped", file=sys.stderr)
    report = {"runs": runs, "hosts": args.hosts,
              "report_interval": args.report_interval, "seed": args.seed,
              "skipped_lines": len(workload.skipped)}
    if args.plot:
        from scheduler.simulation import plot

        plot.write(args.plot, runs, histories, args.report_interval)
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        print(table(runs))
        if args.plot:
            print(f"plot written to {args.plot}")
    return 0


def scratch_directory() -> tempfile.TemporaryDirectory:
    """A directory for the scratch databases of simulations, in memory
    (/dev/shm) where the machine has it; removed when its block ends."""
    root = "/dev/shm" if os.path.isdir("/dev/shm") else None
    return tempfile.TemporaryDirectory(prefix="simulate-", dir=root)


def run_all(configs: list[tuple[str, cfg.ConfigOpts]],
            workload: trace.Workload, settings: runner.Settings,
            progress: bool = True
            ) -> tuple[list[dict], list[list]]:
    """Run ``workload`` under each (name, configuration), one after the
    other, each on a scratch database unless it names one; their JSON
    figures and cpu.percent samples. Raises InvalidRequest naming the
    configuration whose database holds real compute nodes."""
    runs, histories = [], []
    with scratch_directory() as scratch:
        for index, (name, run_conf) in enumerate(configs):
            try:
                _use_database(run_conf, scratch, index)
            except exception.InvalidRequest as e:
                raise exception.InvalidRequest(
                    f"configuration {name}: {e}") from None
            simulation = runner.Simulation(run_conf, workload, settings)
            bar = (_Progress(settings.duration or workload.span, name)
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


def table(runs: list[dict]) -> str:
    """The figures, one column per configuration."""
    return output.table(
        ["figure"] + [run["config"] for run in runs],
        [[key] + [f"{run[key]:g}" if isinstance(run[key], float)
                  else run[key] for run in runs] for key in TABLE_ROWS])
