"""``scheduler-manage simulate``'s options, and what is wrong with the
values given, found before anything is simulated."""

from __future__ import annotations

import argparse
import math
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the parser imports no numpy or database code
    from scheduler.simulation import fleet

#: The uniform fleet's options, exclusive with --fleet, and their
#: defaults (applied when --fleet is not given: argparse's own defaults
#: would hide whether they were given).
FLEET_DEFAULTS = {"hosts": 100, "host_vcpus": 32, "host_memory_mb": 131072,
                  "clusters": 1}

#: The destinations of add_workload_arguments' options.
WORKLOAD_OPTIONS = ("trace", "synthetic", "cpu_readings", "seed", "fleet",
                    "hosts", "clusters", "host_vcpus", "host_memory_mb",
                    "duration", "report_interval")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``simulate``, each with its default in its help."""
    add_workload_arguments(parser)
    parser.add_argument("--oracle", action="store_true",
                        help="add a run placing with perfect knowledge of "
                        "every VM's future CPU: the ceiling of placement "
                        "(default: off)")
    parser.add_argument("--compare", action="append", default=[],
                        metavar="CONFIG", help="another configuration "
                        "file run on the same workload; repeatable "
                        "(default: none, only --config-file)")
    parser.add_argument("--format", choices=("table", "json"),
                        default="table", help="the report for people or "
                        "for tools (default: %(default)s)")
    parser.add_argument("--plot", metavar="FILE.png", help="also draw "
                        "each run's per-node cpu.percent and the figures "
                        "into this image; its folder must exist (default: "
                        "none, no picture)")


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """The workload, fleet and clock options ``simulate`` and ``tune``
    share."""
    workload = parser.add_mutually_exclusive_group(required=True)
    workload.add_argument("--trace", metavar="FILE",
                          help="Azure Public Dataset vmtable CSV (this or "
                          "--synthetic is required)")
    workload.add_argument("--synthetic", type=int, metavar="N",
                          help="N VMs drawn like that dataset")
    parser.add_argument("--cpu-readings", action="append", default=[],
                        metavar="FILE", help="per-VM CPU readings (Azure "
                        "vm_cpu_readings layout) in place of the CPU model; "
                        "repeatable (default: none, the CPU model)")
    parser.add_argument("--seed", type=int, default=0, metavar="S",
                        help="seed of the synthetic workload and of the "
                        "VMs' CPU patterns (default: %(default)s)")
    parser.add_argument("--fleet", metavar="FILE", help="CSV, one node "
                        "kind per line: count,vcpus,memory_mb then "
                        "optionally disk_gb,cluster,availability_zone; "
                        "exclusive with --hosts, "
                        "--host-vcpus, --host-memory-mb and --clusters "
                        "(default: none, --hosts nodes alike)")
    parser.add_argument("--hosts", type=int, metavar="N",
                        help="simulated nodes, all alike (default: "
                        f"{FLEET_DEFAULTS['hosts']})")
    parser.add_argument("--clusters", type=int, metavar="N",
                        help="deal the hosts round-robin into this many "
                        "clusters (balancers plan one migration per "
                        "cluster and tick; default: "
                        f"{FLEET_DEFAULTS['clusters']})")
    parser.add_argument("--host-vcpus", type=int, metavar="N",
                        help="vCPUs of each node (default: "
                        f"{FLEET_DEFAULTS['host_vcpus']})")
    parser.add_argument("--host-memory-mb", type=int, metavar="MB",
                        help="memory of each node in MB (default: "
                        f"{FLEET_DEFAULTS['host_memory_mb']})")
    parser.add_argument("--duration", type=float, metavar="SECONDS",
                        help="simulated seconds (default: the trace's "
                        "span; one day with --synthetic)")
    parser.add_argument("--report-interval", type=float, default=60.0,
                        metavar="SECONDS", help="seconds between two "
                        "metric reports of a node (default: %(default)g)")


def bad_arguments(args: argparse.Namespace) -> str | None:
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


def bad_output(args: argparse.Namespace) -> str | None:
    """What would stop an output file from being written (only
    ``--plot``: reports go to stdout), checked before the simulation
    rather than after it."""
    if not args.plot:
        return None
    # Here: matplotlib takes a second to import.
    from scheduler.simulation import plot

    problem = plot.unwritable(args.plot)
    return f"--plot {args.plot}: {problem}" if problem else None


def caption(args: argparse.Namespace, fleet_spec: fleet.FleetSpec) -> str:
    """What was simulated, in one line over the plot: the workload, the
    nodes, the seed and the report interval."""
    if args.trace:
        workload = f"trace {os.path.basename(args.trace)}"
    else:
        workload = f"{args.synthetic} synthetic VMs"
    if args.cpu_readings:
        workload += " with CPU readings " + ", ".join(
            os.path.basename(path) for path in args.cpu_readings)
    if args.fleet:
        nodes = (f"fleet {os.path.basename(args.fleet)} "
                 f"({fleet_spec.hosts} hosts)")
    else:
        nodes = (f"{fleet_spec.hosts} hosts of {fleet_spec.vcpus} vCPUs "
                 f"and {fleet_spec.memory_mb} MB")
        if fleet_spec.clusters > 1:
            nodes += f" in {fleet_spec.clusters} clusters"
    return (f"{workload}; {nodes}; seed {args.seed}; a report every "
            f"{args.report_interval:g} s")
