"""``scheduler-manage tune``: search configuration values on a workload
with the simulator (scheduler.tuning) and write the best found.

Everything that can be wrong with the input (the space, a value of it
that ``config check`` refuses, the objective, the workload, the Dask
scheduler, the storage) is found before any trial runs. Ctrl-C stops
the search; the study keeps the trials done and the same command
resumes it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import tempfile
from typing import TYPE_CHECKING

from oslo_config import cfg

from scheduler.cmd import common
from scheduler.cmd import simulate
from scheduler.cmd import simulate_args
from scheduler.cmd import tune_args
from scheduler.cmd import tune_report
from scheduler.conf import cli

if TYPE_CHECKING:
    from scheduler.tuning import session as session_mod
    from scheduler.tuning import space as space_mod

PROG = "scheduler-manage"
INTERRUPTED_EXIT = 130


class TuneError(Exception):
    """Input that stops the search before any trial: one line, exit 2."""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "tune", help="Search the options a --space file names on a "
        "workload with the simulator (Optuna), starting from "
        "--config-file, and report (and --output) the best "
        "configuration, re-run on a hold-out seed.")
    tune_args.add_arguments(parser)
    parser.set_defaults(func=tune)


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return cli.CONFIG_ERROR_EXIT


def tune(conf: cfg.ConfigOpts) -> int:
    from scheduler.tuning import search

    args = conf.category
    try:
        problem = tune_args.bad_arguments(args)
        if problem:
            raise TuneError(problem)
        session = _prepare(conf, args)
    except TuneError as e:
        return _fail(str(e))
    # A search started in the background inherits SIGINT ignored (a
    # shell's rule for `&`); kill -INT must still stop it cleanly.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with session:
            outcome = session.search(progress=True)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted: the study {session.study_name} keeps "
              f"its completed trials in {session.storage_url}; the same "
              "command resumes it", file=sys.stderr)
        return INTERRUPTED_EXIT
    except search.SearchError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    return _report(args, session, outcome)


def _prepare(conf: cfg.ConfigOpts,
             args: argparse.Namespace) -> session_mod.Session:
    """The session of this search, every input checked (TuneError)."""
    from scheduler.simulation import fleet
    from scheduler.simulation import readings
    from scheduler.simulation import runs
    from scheduler.simulation import trace
    from scheduler.tuning import session as session_mod
    from scheduler.tuning import space as space_mod

    files = tuple(conf.config_file)
    baseline = runs.load_config(list(files))
    location = baseline.get_location("connection", "database")
    if location is not None and \
            location.location != cfg.Locations.opt_default:
        raise TuneError("[database] connection is set in the baseline: "
                        "each trial runs on a scratch database of its "
                        "own; leave it out of the files given to tune")
    problem = simulate.check_config(baseline, "baseline")
    if problem:
        raise TuneError(problem)
    try:
        dimensions = space_mod.read_space(args.space, baseline)
    except space_mod.SpaceError as e:
        raise TuneError(str(e)) from None
    _check_values(files, dimensions, baseline, args.space)
    holdout_args = _holdout_args(args)
    try:
        workload, fleet_spec = simulate.inputs(args)
        holdout_workload, _ = simulate.inputs(holdout_args)
    except (trace.TraceError, fleet.FleetError,
            readings.ReadingsError) as e:
        raise TuneError(str(e)) from None
    storage = args.storage or _default_storage(conf)
    try:
        return session_mod.Session.open(
            config_files=files, baseline_conf=baseline, dimensions=dimensions,
            workload=workload, settings=simulate.settings(args, fleet_spec),
            storage_url=storage,
            study_name=args.study or _study_name(args, files),
            objective_name=args.objective, pareto=args.pareto,
            max_migrations=args.max_migrations,
            holdout_workload=holdout_workload,
            holdout_settings=simulate.settings(holdout_args, fleet_spec),
            holdout_label=_holdout_label(args, holdout_args),
            jobs=args.jobs or os.cpu_count() or 1,
            dask_scheduler=args.dask_scheduler, trials=args.trials,
            check=_trial_problem,
            caption=simulate_args.caption(args, fleet_spec))
    except session_mod.SessionError as e:
        raise TuneError(str(e)) from None


def _check_values(files: tuple[str, ...],
                  dimensions: list[space_mod.Dimension],
                  baseline: cfg.ConfigOpts, space_path: str) -> None:
    """Each range's extremes and every choice, read after the baseline as
    a trial reads them, must be values their option takes. (Whether a
    whole point passes ``config check`` is the trial's business: a
    search over weigher sets makes some combinations it refuses.)"""
    from scheduler.simulation import runs
    from scheduler.tuning import space as space_mod

    with tempfile.TemporaryDirectory(prefix="tune-check-") as directory:
        path = os.path.join(directory, "check.conf")
        for dimension in dimensions:
            for value in dimension.values():
                texts = space_mod.option_values(
                    [dimension], {dimension.key: value}, baseline)
                with open(path, "w", encoding="utf-8") as stream:
                    stream.write(space_mod.conf_text(texts))
                try:
                    found = next(iter(common.option_problems(
                        runs.load_config([*files, path]))), None)
                    problem = None if found is None else str(found)
                except (cfg.Error, ValueError) as e:
                    problem = str(e).splitlines()[0]
                if problem:
                    raise TuneError(f"--space {space_path}: "
                                    f"{dimension.key} = {value!r}: "
                                    f"{problem}")


def _trial_problem(files: list[str]) -> str | None:
    from scheduler.simulation import runs

    return simulate.check_config(runs.load_config(files), "trial")


def _holdout_args(args: argparse.Namespace) -> argparse.Namespace:
    """The workload options of the hold-out: the search's, with the
    hold-out seed and, when given, its trace and readings."""
    holdout = argparse.Namespace(**{
        name: getattr(args, name)
        for name in simulate_args.WORKLOAD_OPTIONS})
    holdout.seed = (args.seed + 1 if args.holdout_seed is None
                    else args.holdout_seed)
    if args.holdout_trace:
        holdout.trace, holdout.synthetic = args.holdout_trace, None
        holdout.cpu_readings = args.holdout_cpu_readings
    return holdout


def _holdout_label(args: argparse.Namespace,
                   holdout: argparse.Namespace) -> str:
    # The paths as given: a hold-out is often the same file names in
    # another folder (other days, other VMs).
    label = f"seed {holdout.seed}"
    if args.holdout_trace:
        label = f"trace {holdout.trace}, " + label
        if holdout.cpu_readings:
            label += ", readings " + ", ".join(holdout.cpu_readings)
    return label


def _default_storage(conf: cfg.ConfigOpts) -> str:
    os.makedirs(conf.state_path, exist_ok=True)
    return f"sqlite:///{os.path.join(conf.state_path, 'tune.sqlite')}"


def _study_name(args: argparse.Namespace, files: tuple[str, ...]) -> str:
    """The same search gets the same study, and so resumes; another
    space, baseline or workload gets another."""
    digest = hashlib.sha256()
    for path in (args.space, *files):
        with open(path, "rb") as stream:
            digest.update(stream.read())
    for name in (*simulate_args.WORKLOAD_OPTIONS, "objective", "pareto",
                 "max_migrations"):
        digest.update(repr(getattr(args, name)).encode())
    return f"tune-{digest.hexdigest()[:12]}"


def _report(args: argparse.Namespace, session: session_mod.Session,
            outcome: session_mod.Outcome) -> int:
    document = tune_report.document(session, outcome)
    if args.format == "json":
        print(json.dumps(document, indent=2), flush=True)
    else:
        print(tune_report.table(session, outcome), flush=True)
    status = 0
    if args.output:
        with open(args.output, "w", encoding="utf-8") as stream:
            stream.write(tune_report.conf_file(session, outcome))
        if args.format == "table":
            print(f"best configuration written to {args.output} (read it "
                  "after the baseline: --config-file BASELINE "
                  f"--config-file {args.output})")
    if args.plot:
        from scheduler.tuning import plot

        try:
            plot.write(args.plot, document["trials"], session.objective,
                       outcome.baseline["search"], outcome.front,
                       session.caption)
        except OSError as e:
            print(f"{PROG}: error: --plot {args.plot}: cannot write the "
                  f"image ({e.strerror or e}); the report above is "
                  "complete", file=sys.stderr)
            status = 1
        else:
            if args.format == "table":
                print(f"plot written to {args.plot}")
    return status
