#!/usr/bin/env python3
"""Wall time of the same ``scheduler-manage tune`` search run with
``--jobs 1`` and then with ``--jobs J`` (default 2), back to back on
this machine: the speed-up parallel trials buy.

Each run is the real console script on a fresh study (its own storage),
the same space, workload, seed and number of trials. Prints one line per
run and the ratio; ``--json FILE`` and ``--plot FILE.png`` keep them.
Batches of different sizes ask different points, so the runs' best
figures may differ; their trial counts may not.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
BASELINE = os.path.join(ROOT, "examples", "simulate", "nova-default.conf")
SPACE = os.path.join(ROOT, "examples", "tune", "space.yaml")
SAMPLE = os.path.join(ROOT, "examples", "traces", "vmtable-sample.csv")


def _run(jobs: int, args: argparse.Namespace, folder: str) -> dict:
    command = [
        sys.executable, "-m", "scheduler.cmd.manage",
        "--config-file", args.baseline, "tune", "--trace", args.trace,
        "--hosts", str(args.hosts), "--space", args.space,
        "--trials", str(args.trials), "--jobs", str(jobs),
        "--storage", f"sqlite:///{folder}/jobs{jobs}.sqlite",
        "--format", "json"]
    if args.duration:
        command += ["--duration", str(args.duration)]
    print(f"tune --jobs {jobs}: {args.trials} trials ...", file=sys.stderr)
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True,
                            check=False)
    wall = time.monotonic() - started
    if result.returncode != 0:
        sys.exit(f"tune --jobs {jobs} failed ({result.returncode}): "
                 f"{result.stderr.strip().splitlines()[-1:]}")
    document = json.loads(result.stdout)
    completed = sum(t["state"] == "COMPLETE" for t in document["trials"])
    return {"jobs": jobs, "wall_seconds": round(wall, 1),
            "trials_completed": completed,
            "best": document["best"]["search"]["hot_host_minutes"]
            if document["best"] else None}


def _plot(path: str, runs: list[dict], caption: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(6, 4))
    ax.bar([f"--jobs {r['jobs']}" for r in runs],
           [r["wall_seconds"] for r in runs], color=["C0", "C1"])
    for index, run in enumerate(runs):
        ax.text(index, run["wall_seconds"], f"{run['wall_seconds']:g} s",
                ha="center", va="bottom")
    ax.set_ylabel("wall seconds")
    ax.set_title(caption, fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--duration", type=float, default=6 * 3600,
                        help="simulated seconds of the sample trace "
                        "(default: the first 6 hours)")
    parser.add_argument("--trace", default=SAMPLE)
    parser.add_argument("--space", default=SPACE)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--plot", metavar="FILE.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tune-") as folder:
        runs = [_run(1, args, folder), _run(args.jobs, args, folder)]
    for run in runs:
        print(" ".join(f"{key}={value}" for key, value in run.items()))
    ratio = runs[0]["wall_seconds"] / runs[1]["wall_seconds"]
    print(f"speedup_jobs{args.jobs}_over_jobs1={ratio:.2f}")
    caption = (f"{args.trials} trials, {os.path.basename(args.trace)} "
               f"({args.duration:g} s) on {args.hosts} hosts: --jobs 1 vs "
               f"--jobs {args.jobs} ({ratio:.2f}x)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as stream:
            json.dump({"runs": runs, "speedup": round(ratio, 2),
                       "workload": caption}, stream, indent=2)
    if args.plot:
        _plot(args.plot, runs, caption)
    return 0


if __name__ == "__main__":
    sys.exit(main())
