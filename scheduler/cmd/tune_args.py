"""``scheduler-manage tune``'s options, and what is wrong with the values
given, found before any trial runs."""

from __future__ import annotations

import argparse
import os

from scheduler.cmd import simulate_args
from scheduler.common import suggest

#: Figures a search may minimise (``simulate``'s, less the workload's
#: size and the clocks).
OBJECTIVES = ("rejected", "hosts_used_peak", "hot_host_minutes",
              "vm_hot_minutes", "overload_core_minutes", "p95_host_cpu",
              "cpu_stddev_mean", "herd_max", "migrations")
DEFAULT_TRIALS = 60


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``tune``, each with its default in its help."""
    simulate_args.add_workload_arguments(parser)
    parser.add_argument("--space", required=True, metavar="FILE.yaml",
                        help="the options to search and their ranges "
                        "(docs/simulator.md, 'Tuning'; required)")
    parser.add_argument("--trials", type=int, default=DEFAULT_TRIALS,
                        metavar="N", help="trials to complete, those of a "
                        "resumed study included (default: %(default)s)")
    parser.add_argument("--jobs", type=int, metavar="J",
                        help="trials run at once in local processes "
                        "(default: the CPU count)")
    parser.add_argument("--dask-scheduler", metavar="ADDRESS",
                        help="run the trials on this Dask cluster's "
                        "workers instead (tcp://host:8786; they must see "
                        "the same files; default: none, local processes)")
    parser.add_argument("--objective", default="hot_host_minutes",
                        metavar="FIGURE",
                        help="the figure to minimise, with rejected no "
                        "higher than the baseline's and migrations within "
                        "--max-migrations (default: %(default)s; one of "
                        f"{', '.join(OBJECTIVES)})")
    parser.add_argument("--pareto", action="store_true",
                        help="minimise hot_host_minutes, migrations and "
                        "hosts_used_peak together (NSGA-II) and report "
                        "the front (default: off, one figure, TPE)")
    parser.add_argument("--max-migrations", type=int, metavar="N",
                        help="most migrations a trial may plan (default: "
                        "one per 10 VMs of the workload)")
    parser.add_argument("--storage", metavar="URL",
                        help="the Optuna storage: an interrupted search "
                        "resumes from it, several machines may share it "
                        "(default: sqlite:///$state_path/tune.sqlite)")
    parser.add_argument("--study", metavar="NAME",
                        help="the study's name in the storage (default: "
                        "one derived from the space, the baseline and the "
                        "workload)")
    parser.add_argument("--holdout-seed", type=int, metavar="S",
                        help="seed of the hold-out run of the baseline "
                        "and the best, not searched on (default: --seed "
                        "+ 1)")
    parser.add_argument("--holdout-trace", metavar="FILE",
                        help="the hold-out's trace instead of the searched "
                        "one, e.g. other days or VMs (default: none, the "
                        "searched trace)")
    parser.add_argument("--holdout-cpu-readings", action="append",
                        default=[], metavar="FILE",
                        help="the hold-out trace's CPU readings; "
                        "repeatable, with --holdout-trace (default: none, "
                        "the CPU model)")
    parser.add_argument("--output", metavar="FILE.conf",
                        help="write the best configuration's searched "
                        "options here, to read after the baseline "
                        "(default: none)")
    parser.add_argument("--format", choices=("table", "json"),
                        default="table", help="the report for people or "
                        "for tools (default: %(default)s)")
    parser.add_argument("--plot", metavar="FILE.png", help="draw the "
                        "search's progress (and with --pareto its front) "
                        "into this image (default: none)")


def bad_arguments(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments, before anything runs."""
    problem = (simulate_args.bad_arguments(args)
               or simulate_args.bad_output(args))
    if problem:
        return problem
    if args.objective not in OBJECTIVES:
        return (f"--objective {args.objective}: no such figure; expected "
                f"one of {', '.join(OBJECTIVES)}"
                + suggest.did_you_mean(args.objective, OBJECTIVES))
    if args.holdout_cpu_readings and not args.holdout_trace:
        return ("--holdout-cpu-readings needs --holdout-trace: readings "
                "join a trace's VMs by vmid")
    if args.trials < 1:
        return f"--trials {args.trials}: expected at least 1"
    if args.jobs is not None and (args.jobs < 1 or args.dask_scheduler):
        return (f"--jobs {args.jobs}: expected at least 1" if args.jobs < 1
                else "--jobs and --dask-scheduler are exclusive: the "
                "cluster's workers say how many trials run at once")
    if args.max_migrations is not None and args.max_migrations < 0:
        return f"--max-migrations {args.max_migrations}: expected >= 0"
    if args.output:
        folder = os.path.dirname(args.output) or "."
        if not os.path.isdir(folder) or os.path.isdir(args.output):
            return (f"--output {args.output}: expected a file in an "
                    "existing folder")
    return None
