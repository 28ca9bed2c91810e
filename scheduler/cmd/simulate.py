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
from scheduler.simulation import readings
from scheduler.simulation import runner
from scheduler.simulation import trace

PROG = "scheduler-manage"
#: Malformed trace lines shown one by one; the rest are only counted.
SHOWN_SKIPPED = 20
#: Figures of the table, in order.
TABLE_ROWS = ("vms", "placed", "rejected", "hosts_used_peak",
              "hot_host_minutes", "vm_hot_minutes", "overload_core_minutes",
              "p95_host_cpu", "cpu_stddev_mean", "herd_max",
              "migrations", "sim_seconds", "wall_seconds")
#: The name of the ``--oracle`` run.
ORACLE = "oracle"
#: The uniform fleet's options, exclusive with --fleet, and their
#: defaults (applied when --fleet is not given: argparse's own defaults
#: would hide whether they were given).
FLEET_DEFAULTS = {"hosts": 100, "host_vcpus": 32, "host_memory_mb": 131072,
                  "clusters": 1}


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "simulate", help="Replay a VM trace against the real scheduler "
        "on simulated nodes and report placement quality.")
    workload = parser.add_mutually_exclusive_group(required=True)
    workload.add_argument("--trace", metavar="FILE",
                          help="Azure Public Dataset vmtable CSV")
    workload.add_argument("--synthetic", type=int, metavar="N",
                          help="N VMs drawn like that dataset")
    parser.add_argument("--cpu-readings", action="append", default=[],
                        metavar="FILE", help="per-VM CPU readings (Azure "
                        "vm_cpu_readings layout) in place of the CPU model; "
                        "repeatable")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fleet", metavar="FILE", help="CSV of node kinds "
                        "(count,vcpus,memory_mb[,disk_gb,cluster,"
                        "availability_zone]); instead of --hosts...")
    parser.add_argument("--hosts", type=int, help="default 100")
    parser.add_argument("--clusters", type=int,
                        help="deal the hosts round-robin into this many "
                        "clusters (balancers plan one migration per "
                        "cluster and tick; default 1)")
    parser.add_argument("--host-vcpus", type=int, help="default 32")
    parser.add_argument("--host-memory-mb", type=int,
                        help="default 131072")
    parser.add_argument("--oracle", action="store_true",
                        help="add a run placing with perfect knowledge of "
                        "every VM's future CPU: the ceiling of placement")
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


def _fleet_spec(args) -> fleet.FleetSpec:
    """The nodes of ``--fleet`` or of the uniform fleet's options (raises
    FleetError)."""
    if args.fleet:
        return fleet.read_fleet(args.fleet)
    return fleet.FleetSpec(args.hosts, args.host_vcpus, args.host_memory_mb,
                           clusters=args.clusters)


def _inputs(args) -> tuple[trace.Workload, fleet.FleetSpec]:
    """The workload and the nodes; raises TraceError, FleetError or
    ReadingsError (a readings file that cannot be opened, readings
    without a trace to join)."""
    workload = _workload(args)
    fleet_spec = _fleet_spec(args)
    readings.check_files(args.cpu_readings)
    if args.cpu_readings and workload.vmid is None:
        raise readings.ReadingsError(
            "--cpu-readings needs --trace: readings join the trace's VMs "
            "by vmid")
    return workload, fleet_spec


def _bad_arguments(args) -> str | None:
    """What is wrong with the fleet and time arguments, if anything."""
    given = [name for name in FLEET_DEFAULTS
             if getattr(args, name) is not None]
    if args.fleet and given:
        return (f"--fleet and --{given[0].replace('_', '-')} are exclusive: "
                "the fleet file names the nodes")
    for name, default in FLEET_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
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
        workload, fleet_spec = _inputs(args)
    except (trace.TraceError, fleet.FleetError,
            readings.ReadingsError) as e:
        return _fail(str(e))
    if not conf.debug:
        # One INFO line per decision would drown the report.
        logging.getLogger("scheduler").logger.setLevel(logging.WARNING)
    settings = runner.Settings(
        fleet=fleet_spec, seed=args.seed,
        report_interval=args.report_interval, duration=args.duration,
        readings=tuple(args.cpu_readings))
    # Once start-up is done (scheduler-service does not: see gc_tuning).
    gc_tuning.tune()
    try:
        runs, histories = run_all(configs, workload, settings,
                                  oracle=args.oracle)
    except (exception.InvalidRequest, readings.ReadingsError) as e:
        return _fail(str(e))
    if workload.skipped:
        print(f"{PROG}: {len(workload.skipped)} malformed trace line(s) "
              "skipped", file=sys.stderr)
    _show_readings_problems(runs)
    report = {"runs": runs, "hosts": fleet_spec.hosts,
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


def _show_readings_problems(runs: list[dict]) -> None:
    """The skipped readings lines of the first run (every run reads the
    same files), one by one up to ``readings.SHOWN``, then counted."""
    problems = [run.pop("readings_problems", []) for run in runs]
    if not runs or "readings_skipped" not in runs[0]:
        return
    for path, number, reason in problems[0]:
        print(f"{PROG}: {path}:{number}: skipped: {reason}",
              file=sys.stderr)
    skipped = runs[0]["readings_skipped"]
    if skipped:
        print(f"{PROG}: {skipped} readings line(s) skipped "
              f"({runs[0]['readings_malformed']} malformed, "
              f"{runs[0]['readings_out_of_order']} out of time order)",
              file=sys.stderr)


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


def _simulation(name: str, run_conf: cfg.ConfigOpts,
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
                _use_database(run_conf, scratch, index)
            except exception.InvalidRequest as e:
                raise exception.InvalidRequest(
                    f"configuration {name}: {e}") from None
            simulation = _simulation(name, run_conf, workload, settings,
                                     runs)
            bar = (_Progress(settings.span(workload), name)
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
