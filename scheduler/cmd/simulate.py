"""``scheduler-manage simulate``: replay a workload against the real
engine and report how well it placed (scheduler.simulation).

The simulation's modules (the engine, NumPy, the database) are imported
by the functions that use them: ``scheduler-manage`` builds this parser
for every command, ``--help`` and ``--version`` included."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from oslo_config import cfg
from oslo_log import log as logging

from scheduler import exception
from scheduler.cmd import output
from scheduler.cmd import simulate_args
from scheduler.common import gc_tuning
from scheduler.conf import cli

if TYPE_CHECKING:
    from scheduler.simulation import fleet
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


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "simulate", help="Replay a VM trace against the real scheduler "
        "on simulated nodes and report placement quality.")
    simulate_args.add_arguments(parser)
    parser.set_defaults(func=simulate)


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return cli.CONFIG_ERROR_EXIT


def check_config(conf: cfg.ConfigOpts, name: str) -> str | None:
    """Why configuration ``name`` cannot be simulated: the first line of
    its ``config check``, or None."""
    # Here: config check imports oslo.messaging and the service.
    from scheduler.cmd import config_check

    problems = config_check.problems(conf)
    if problems:
        return (f"configuration {name} does not pass config check "
                f"({len(problems)} problem(s)): {problems[0]}")
    return None


def _workload(args) -> trace.Workload:
    from scheduler.simulation import trace

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


def _fleet_spec(args) -> fleet.FleetSpec:
    """The nodes of ``--fleet`` or of the uniform fleet's options (raises
    FleetError)."""
    from scheduler.simulation import fleet

    if args.fleet:
        return fleet.read_fleet(args.fleet)
    return fleet.FleetSpec(args.hosts, args.host_vcpus, args.host_memory_mb,
                           clusters=args.clusters)


def inputs(args) -> tuple[trace.Workload, fleet.FleetSpec]:
    """The workload and the nodes; raises TraceError, FleetError or
    ReadingsError (a readings file that cannot be opened, readings
    without a trace to join)."""
    from scheduler.simulation import readings

    workload = _workload(args)
    fleet_spec = _fleet_spec(args)
    readings.check_files(args.cpu_readings)
    if args.cpu_readings and workload.vmid is None:
        raise readings.ReadingsError(
            "--cpu-readings needs --trace: readings join the trace's VMs "
            "by vmid")
    return workload, fleet_spec


def settings(args: argparse.Namespace,
             fleet_spec: fleet.FleetSpec) -> runner.Settings:
    """The run settings of the workload options."""
    from scheduler.simulation import runner

    return runner.Settings(
        fleet=fleet_spec, seed=args.seed,
        report_interval=args.report_interval, duration=args.duration,
        readings=tuple(args.cpu_readings))


def simulate(conf: cfg.ConfigOpts) -> int:
    from scheduler.simulation import fleet
    from scheduler.simulation import readings
    from scheduler.simulation import runs
    from scheduler.simulation import trace

    args = conf.category
    problem = (simulate_args.bad_arguments(args)
               or simulate_args.bad_output(args))
    if problem:
        return _fail(problem)
    configs = [(", ".join(os.path.basename(p) for p in conf.config_file)
                or "default", conf)]
    try:
        configs += [(os.path.basename(path), runs.load_config(path))
                    for path in args.compare]
    except (cfg.Error, OSError, ValueError) as e:
        return _fail(f"--compare: {str(e).splitlines()[0]}")
    for name, run_conf in configs:
        problem = check_config(run_conf, name)
        if problem:
            return _fail(problem)
    try:
        workload, fleet_spec = inputs(args)
    except (trace.TraceError, fleet.FleetError,
            readings.ReadingsError) as e:
        return _fail(str(e))
    if not conf.debug:
        # One INFO line per decision would drown the report.
        logging.getLogger("scheduler").logger.setLevel(logging.WARNING)
    run_settings = settings(args, fleet_spec)
    # Once start-up is done (scheduler-service does not: see gc_tuning).
    gc_tuning.tune()
    try:
        results, histories = runs.run_all(configs, workload, run_settings,
                                          oracle=args.oracle)
    except (exception.InvalidRequest, readings.ReadingsError) as e:
        return _fail(str(e))
    if workload.skipped:
        print(f"{PROG}: {len(workload.skipped)} malformed trace line(s) "
              "skipped", file=sys.stderr)
    _show_readings_problems(results)
    return report(args, results, histories, fleet_spec,
                  len(workload.skipped))


def report(args: argparse.Namespace, runs: list[dict],
           histories: list[list], fleet_spec: fleet.FleetSpec,
           skipped_lines: int) -> int:
    """Print the figures (table or JSON), then draw ``--plot``: an image
    that cannot be written after all (disk full) costs the picture, not
    the figures; exit status 1 then."""
    if args.format == "json":
        print(json.dumps({"runs": runs, "hosts": fleet_spec.hosts,
                          "report_interval": args.report_interval,
                          "seed": args.seed, "skipped_lines": skipped_lines},
                         indent=2), flush=True)
    else:
        print(table(runs), flush=True)
    if not args.plot:
        return 0
    from scheduler.simulation import plot

    try:
        plot.write(args.plot, runs, histories, args.report_interval,
                   simulate_args.caption(args, fleet_spec))
    except OSError as e:
        print(f"{PROG}: error: --plot {args.plot}: cannot write the image "
              f"({e.strerror or e}); the report above is complete",
              file=sys.stderr)
        return 1
    if args.format == "table":
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


def table(runs: list[dict]) -> str:
    """The figures, one column per configuration."""
    return output.table(
        ["figure"] + [run["config"] for run in runs],
        [[key] + [f"{run[key]:g}" if isinstance(run[key], float)
                  else run[key] for run in runs] for key in TABLE_ROWS])
