#!/usr/bin/env python3
"""Placement quality of the built-in configurations, by simulation.

Replays one workload (the sample trace by default) with
``scheduler-manage simulate``'s engine under each configuration below
and prints one line per configuration:

    config=nova-default hot_host_minutes=... cpu_stddev_mean=...
    herd_max=... migrations=... rejected=... hosts_used_peak=... wall_s=...
    cpu_s=...

and where each run's time went (``wall_s_<event>=``: the nodes' report
writes, the decisions with the host cache reads before them, the
balancing ticks with theirs, instance ends), then the simulation speed
(``sim_days_per_wall_minute``). ``--herd``
adds the herding case: identical idle hosts, 100 requests within one
report interval, weighed by ``cpu.percent=-1.0`` alone.

On real utilisation: ``--readings-draws DIR...`` (directories holding
``vmtable.csv``, ``readings.csv`` and ``fleet.csv``, as
``tools/planetlab_workload.py`` writes them) or ``--planetlab FILE
--draws N`` (draws made on the fly) runs each configuration (``--configs
A.conf B.conf ...``, the first the baseline; default nova-default and
cpu-minmax) on each draw over its whole span and prints, per draw and
pooled, ``hot_host_minutes`` against the baseline in percent, the range
over draws and the draws won; with ``--oracle``, the share of the
oracle's gain over the baseline each configuration takes. ``--json FILE``
writes it all, ``--plot FILE.png`` draws the per-draw figures; progress
goes to stderr.
"""

import argparse
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

SAMPLE = os.path.join(os.path.dirname(__file__), os.pardir, "examples",
                      "traces", "vmtable-sample.csv")
CONFIGS = {
    "nova-default": "[filter_scheduler]\nweight_classes = RAMWeigher\n",
    "cpu-minmax": ("[filter_scheduler]\n"
                   "weight_classes = RAMWeigher,MetricsWeigher\n"
                   "[metrics]\nweight_setting = cpu.percent=-1.0\n"),
    "cpu-hardmax": ("[filter_scheduler]\n"
                    "weight_classes = RAMWeigher,MetricsWeigher\n"
                    "weight_normalization = hardmax\n"
                    "[metrics]\nweight_setting = cpu.percent=-1.0\n"),
    "evenly_distributed": "[scheduler]\ndefault_policy = evenly_distributed\n",
    "power_saving": "[scheduler]\ndefault_policy = power_saving\n",
}
HERD_CONFIG = ("[filter_scheduler]\nweight_classes = MetricsWeigher\n"
               "[metrics]\nweight_setting = cpu.percent=-1.0\n")


def _configs(names, directory):
    configs = []
    for name in names:
        path = os.path.join(directory, f"{name}.conf")
        with open(path, "w") as stream:
            stream.write(CONFIGS.get(name, HERD_CONFIG))
        configs.append((name, simulation_runs.load_config(path)))
    return configs


def herd_workload(requests: int, interval: float) -> trace.Workload:
    """``requests`` steady 1-core VMs arriving within one interval."""
    created = np.linspace(0.0, interval * 0.99, requests)
    return trace.Workload(
        created=created, deleted=created + 10 * interval,
        maxcpu=np.full(requests, 50.0), avgcpu=np.full(requests, 50.0),
        p95maxcpu=np.full(requests, 50.0),
        cores=np.ones(requests, dtype=np.int64),
        memory_mb=np.full(requests, 2048, dtype=np.int64),
        interactive=np.zeros(requests, dtype=bool))


def main() -> int:
    if any(arg.startswith(("--readings-draws", "--planetlab"))
           for arg in sys.argv[1:]):
        import bench_quality_draws

        return bench_quality_draws.main(sys.argv[1:], CONFIGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", choices=CONFIGS,
                        help="run only these (default: all)")
    parser.add_argument("--trace", default=SAMPLE)
    parser.add_argument("--synthetic", type=int, metavar="N")
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--clusters", type=int, default=1)
    parser.add_argument("--duration", type=float)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--herd", action="store_true",
                        help="also run the herding case (1,000 hosts)")
    args = parser.parse_args()
    logging.getLogger("scheduler").setLevel(logging.WARNING)
    gc_tuning.tune()
    workload = (trace.synthetic(args.synthetic, args.seed,
                                args.duration or trace.DAY)
                if args.synthetic else trace.read_vmtable(args.trace))
    settings = runner.Settings(fleet=fleet.FleetSpec(args.hosts, 32, 131072,
                                                     clusters=args.clusters),
                               seed=args.seed, duration=args.duration)
    with tempfile.TemporaryDirectory() as directory:
        runs, _ = simulation_runs.run_all(
            _configs(args.config or list(CONFIGS), directory), workload,
            settings)
        for run in runs:
            print(f"config={run['config']} hosts={args.hosts} "
                  f"clusters={args.clusters} "
                  f"vms={run['vms']} "
                  f"hot_host_minutes={run['hot_host_minutes']:g} "
                  f"cpu_stddev_mean={run['cpu_stddev_mean']:g} "
                  f"herd_max={run['herd_max']} "
                  f"migrations={run['migrations']} "
                  f"rejected={run['rejected']} "
                  f"hosts_used_peak={run['hosts_used_peak']} "
                  f"wall_s={run['wall_seconds']:.1f} "
                  f"cpu_s={run['cpu_seconds']:.1f} "
                  + " ".join(f"wall_s_{name}={seconds:.1f}" for name, seconds
                             in run["wall_seconds_by_event"].items()),
                  flush=True)
        sim = sum(run["sim_seconds"] for run in runs)
        wall = sum(run["wall_seconds"] for run in runs)
        print(f"speed hosts={args.hosts} sim_days_per_wall_minute="
              f"{sim / 86400 / (wall / 60):.2f} "
              f"wall_s_per_sim_day={wall / (sim / 86400):.1f}")
        if args.herd:
            herd = runner.Settings(fleet=fleet.FleetSpec(1000, 32, 131072),
                                   duration=60.0)
            (result,), _ = simulation_runs.run_all(
                _configs(["herd"], directory), herd_workload(100, 60.0),
                herd)
            print(f"case=herd hosts=1000 requests=100 weigher=cpu.percent=-1 "
                  f"herd_max={result['herd_max']} "
                  f"hosts_used_peak={result['hosts_used_peak']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
