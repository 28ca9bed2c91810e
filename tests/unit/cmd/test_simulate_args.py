"""``scheduler-manage simulate``'s options: help with defaults, output
paths checked before the simulation, the plot's caption."""

import argparse

import pytest

from scheduler.cmd import simulate_args
from scheduler.simulation import fleet


@pytest.fixture
def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simulate")
    simulate_args.add_arguments(parser)
    return parser


def test_every_option_says_what_it_does_and_its_default(parser):
    required = {"--trace", "--synthetic"}
    options = [action for action in parser._actions
               if action.option_strings != ["-h", "--help"]]
    assert {action.option_strings[0] for action in options} >= {
        "--seed", "--hosts", "--host-vcpus", "--host-memory-mb",
        "--report-interval", "--format", "--plot", "--cpu-readings",
        "--fleet", "--oracle", "--clusters", "--duration", "--compare"}
    for action in options:
        name = action.option_strings[0]
        assert action.help, name
        if name not in required:
            assert "default" in action.help, name
    shown = " ".join(parser.format_help().split())
    for expected in ("(default: 0)", "(default: 100)", "(default: 32)",
                     "(default: 131072)", "(default: 60)",
                     "(default: table)", "default: 1)"):
        assert expected in shown


def test_the_uniform_fleet_defaults_apply_without_fleet(parser):
    args = parser.parse_args(["--synthetic", "5"])
    assert simulate_args.bad_arguments(args) is None
    assert (args.hosts, args.host_vcpus, args.host_memory_mb,
            args.clusters) == (100, 32, 131072, 1)


def test_a_plot_into_a_missing_folder_is_refused_naming_both(parser,
                                                             tmp_path):
    path = tmp_path / "missing" / "out.png"
    args = parser.parse_args(["--synthetic", "5", "--plot", str(path)])
    assert simulate_args.bad_output(args) == (
        f"--plot {path}: folder {path.parent} does not exist")


def test_no_plot_or_a_writable_one_passes(parser, tmp_path):
    assert simulate_args.bad_output(
        parser.parse_args(["--synthetic", "5"])) is None
    assert simulate_args.bad_output(parser.parse_args(
        ["--synthetic", "5", "--plot", str(tmp_path / "out.png")])) is None


def test_caption_of_a_trace_on_a_uniform_fleet(parser):
    args = parser.parse_args(["--trace", "/data/vmtable.csv", "--seed", "4",
                              "--report-interval", "30"])
    spec = fleet.FleetSpec(100, 32, 131072, clusters=4)
    assert simulate_args.caption(args, spec) == (
        "trace vmtable.csv; 100 hosts of 32 vCPUs and 131072 MB in 4 "
        "clusters; seed 4; a report every 30 s")


def test_caption_of_synthetic_vms_on_a_fleet_file(parser):
    args = parser.parse_args(["--synthetic", "300", "--fleet",
                              "/etc/fleet.csv"])
    spec = fleet.FleetSpec.from_kinds([fleet.NodeKind(3, 8, 1024),
                                       fleet.NodeKind(2, 16, 2048)])
    assert simulate_args.caption(args, spec) == (
        "300 synthetic VMs; fleet fleet.csv (5 hosts); seed 0; a report "
        "every 60 s")
