"""``bench_quality.py --readings-draws DIR... | --planetlab FILE --draws N``:
placement quality on real per-VM utilisation, several draws.

Each configuration runs on each draw (its ``vmtable.csv``,
``readings.csv`` and ``fleet.csv``) over the draw's whole span (up to its
last VM deletion, unless ``--duration``). Printed per draw and pooled:
``hot_host_minutes`` against the baseline (the first configuration) in
percent; pooled is the sum over draws against the baseline's sum, with
the range of the per-draw percentages and the draws won (fewer hot
minutes than the baseline); with ``--oracle``, the share of the oracle's
gain over the baseline each configuration takes (pooled: of the summed
gains). ``--jobs N`` runs N draws at a time, each in a process of its
own. Progress on stderr.
"""

import argparse
import concurrent.futures
import json
import logging
import os
import sys
import tempfile

import numpy as np

from scheduler.common import gc_tuning
from scheduler.simulation import fleet
from scheduler.simulation import runner
from scheduler.simulation import runs as simulation_runs
from scheduler.simulation import trace

DEFAULT_CONFIGS = ("nova-default", "cpu-minmax")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench_quality.py", description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--readings-draws", nargs="+", metavar="DIR")
    source.add_argument("--planetlab", metavar="FILE",
                        help="planetlab-cpu.csv.gz: make --draws draws")
    parser.add_argument("--names", metavar="DIR",
                        help="with --planetlab: a checkout of the original "
                        "traces, so that each VM is one machine throughout "
                        "(tools/planetlab_workload.py --names)")
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--configs", nargs="+", metavar="FILE.conf",
                        help="configuration files, the first the baseline "
                        "(default: nova-default, cpu-minmax)")
    parser.add_argument("--oracle", action="store_true")
    parser.add_argument("--jobs", type=int, default=1,
                        help="draws run at once, each in its own process")
    parser.add_argument("--duration", type=float)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--plot", metavar="FILE.png")
    return parser


def _make_draws(args, directory: str) -> list[str]:
    import planetlab_workload as pw

    days, rows = pw.read_dataset(args.planetlab)
    names = pw.read_names(args.names, days) if args.names else None
    paths = []
    for draw in range(args.draws):
        rng = np.random.default_rng([args.seed, draw])
        series = (pw.draw_machines(days, rows, names, draw, args.seed, 500, 3)
                  if names else
                  pw.draw_series(days, rows, draw, args.seed, 500, 3))
        created = rng.integers(0, pw.SLOTS_PER_DAY, 500) * pw.SLOT
        cores, memory = pw.sizes(rng, 500)
        path = os.path.join(directory, f"draw-{draw}")
        pw.write_draw(path, series, created, cores, memory, 0.6)
        paths.append(path)
    return paths


def _configs(args, directory: str, builtin: dict) -> list[str]:
    """The configuration files to run, the baseline first."""
    if args.configs:
        return list(args.configs)
    paths = []
    for name in DEFAULT_CONFIGS:
        path = os.path.join(directory, f"{name}.conf")
        with open(path, "w") as stream:
            stream.write(builtin[name])
        paths.append(path)
    return paths


def run_draw(path: str, config_files: list[str], args) -> list[dict]:
    """The runs of every configuration (and the oracle) on one draw."""
    logging.getLogger("scheduler").setLevel(logging.WARNING)
    configs = [(os.path.splitext(os.path.basename(name))[0],
                simulation_runs.load_config(name)) for name in config_files]
    workload = trace.read_vmtable(os.path.join(path, "vmtable.csv"))
    duration = args.duration or float(workload.deleted.max())
    settings = runner.Settings(
        fleet=fleet.read_fleet(os.path.join(path, "fleet.csv")),
        seed=args.seed, duration=duration,
        readings=(os.path.join(path, "readings.csv"),))
    runs, _ = simulation_runs.run_all(configs, workload, settings,
                               oracle=args.oracle)
    for run in runs:
        run.pop("readings_problems", None)
    return runs


def _percent(value: float, baseline: float) -> float | None:
    return None if baseline == 0 else 100.0 * (value - baseline) / baseline


def _share(value: float, baseline: float, oracle: float) -> float | None:
    gain = baseline - oracle
    return None if gain <= 0 else 100.0 * (baseline - value) / gain


def summarise(draws: list[list[dict]]) -> dict:
    """Per configuration: per-draw and pooled figures (``__doc__``)."""
    names = [run["config"] for run in draws[0]]
    base = [runs[0]["hot_host_minutes"] for runs in draws]
    oracle = ([runs[-1]["hot_host_minutes"] for runs in draws]
              if names[-1] == simulation_runs.ORACLE else None)
    summary = {}
    for index, name in enumerate(names):
        hot = [runs[index]["hot_host_minutes"] for runs in draws]
        per_draw = [_percent(h, b) for h, b in zip(hot, base, strict=True)]
        known = [p for p in per_draw if p is not None]
        entry = {"hot_host_minutes": hot, "vs_baseline_percent": per_draw,
                 "pooled_percent": _percent(sum(hot), sum(base)),
                 "range_percent": [min(known), max(known)] if known else None,
                 "draws_won": sum(h < b for h, b in zip(hot, base,
                                                        strict=True)),
                 "rejected": [runs[index]["rejected"] for runs in draws],
                 "migrations": [runs[index]["migrations"] for runs in draws],
                 "wall_seconds": [runs[index]["wall_seconds"]
                                  for runs in draws]}
        if oracle is not None:
            entry["oracle_share_percent"] = [
                _share(h, b, o) for h, b, o in zip(hot, base, oracle,
                                                   strict=True)]
            entry["pooled_oracle_share_percent"] = _share(
                sum(hot), sum(base), sum(oracle))
        summary[name] = entry
    return summary


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


def _print(summary: dict, draws: int) -> None:
    for name, entry in summary.items():
        low_high = entry["range_percent"]
        share = entry.get("pooled_oracle_share_percent")
        print(f"pooled config={name} hot_host_minutes="
              f"{sum(entry['hot_host_minutes']):g} vs_baseline="
              f"{_fmt(entry['pooled_percent'])} range="
              f"{_fmt(low_high[0]) if low_high else 'n/a'}.."
              f"{_fmt(low_high[1]) if low_high else 'n/a'} draws_won="
              f"{entry['draws_won']}/{draws}"
              + (f" oracle_share={share:.0f}%" if share is not None else ""),
              flush=True)


def _plot(path: str, summary: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.5), layout="constrained")
    for name, entry in summary.items():
        axis.plot(range(len(entry["hot_host_minutes"])),
                  entry["hot_host_minutes"], marker="o", label=name)
    axis.set_xlabel("draw")
    axis.set_ylabel("hot host-minutes")
    axis.legend()
    figure.savefig(path)
    plt.close(figure)


def _run_draws(paths: list[str], configs: list[str], args
               ) -> list[list[dict]]:
    """Every draw's runs, in the order of ``paths``; ``args.jobs`` at a
    time (spawned processes: each run opens databases of its own)."""
    draws: dict[str, list[dict]] = {}
    context = __import__("multiprocessing").get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(
            max_workers=max(args.jobs, 1), mp_context=context) as pool:
        running = {pool.submit(run_draw, path, configs, args): path
                   for path in paths}
        for done in concurrent.futures.as_completed(running):
            path = running[done]
            draws[path] = runs = done.result()
            print(f"draw {len(draws)}/{len(paths)} done: {path}",
                  file=sys.stderr)
            _print_draw(os.path.basename(os.path.normpath(path)), runs)
    return [draws[path] for path in paths]


def _print_draw(name: str, runs: list[dict]) -> None:
    base = runs[0]["hot_host_minutes"]
    for run in runs:
        print(f"draw={name} config={run['config']} "
              f"hot_host_minutes={run['hot_host_minutes']:g} "
              f"vs_baseline="
              f"{_fmt(_percent(run['hot_host_minutes'], base))} "
              f"overload_core_minutes={run['overload_core_minutes']:g} "
              f"rejected={run['rejected']} migrations={run['migrations']} "
              f"hosts_used_peak={run['hosts_used_peak']} "
              f"wall_s={run['wall_seconds']:.1f}", flush=True)


def main(argv: list[str], builtin: dict) -> int:
    args = _parser().parse_args(argv)
    logging.getLogger("scheduler").setLevel(logging.WARNING)
    gc_tuning.tune()
    with tempfile.TemporaryDirectory() as directory:
        paths = (args.readings_draws if args.readings_draws
                 else _make_draws(args, directory))
        configs = _configs(args, directory, builtin)
        draws = _run_draws(paths, configs, args)
    summary = summarise(draws)
    _print(summary, len(draws))
    if args.json:
        with open(args.json, "w") as stream:
            json.dump({"draws": paths, "runs": draws, "summary": summary},
                      stream, indent=2)
    if args.plot:
        _plot(args.plot, summary)
    return 0
