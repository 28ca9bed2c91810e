"""``scheduler-manage tune``'s options: help with defaults, and what is
refused before any trial runs."""

import argparse

import pytest

from scheduler.cmd import tune_args


@pytest.fixture
def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tune")
    tune_args.add_arguments(parser)
    return parser


def test_every_option_says_what_it_does_and_its_default(parser):
    required = {"--trace", "--synthetic", "--space"}
    for action in parser._actions:
        name = action.option_strings[0]
        if name in ("-h", *required):
            continue
        assert action.help and "default" in action.help, name


def _problem(parser, *extra):
    args = parser.parse_args(["--synthetic", "10", "--space", "s.yaml",
                              *extra])
    return tune_args.bad_arguments(args)


def test_valid_arguments_pass(parser):
    assert _problem(parser) is None
    assert _problem(parser, "--jobs", "3", "--objective", "migrations",
                    "--max-migrations", "0") is None


@pytest.mark.parametrize("extra, message", [
    (["--objective", "hot_host_minute"],
     "--objective hot_host_minute: no such figure; expected one of rejected, "
     "hosts_used_peak, hot_host_minutes, vm_hot_minutes, "
     "overload_core_minutes, p95_host_cpu, cpu_stddev_mean, herd_max, "
     "migrations; did you mean 'hot_host_minutes'?"),
    (["--objective", "wall_seconds"], "--objective wall_seconds: no such"),
    (["--trials", "0"], "--trials 0: expected at least 1"),
    (["--jobs", "0"], "--jobs 0: expected at least 1"),
    (["--jobs", "2", "--dask-scheduler", "tcp://h:8786"],
     "--jobs and --dask-scheduler are exclusive"),
    (["--max-migrations", "-1"], "--max-migrations -1: expected >= 0"),
    (["--output", "/nonexistent/best.conf"],
     "--output /nonexistent/best.conf: expected a file in an existing "
     "folder"),
    (["--plot", "/nonexistent/t.png"], "--plot /nonexistent/t.png: folder"),
    (["--hosts", "0"], "--hosts 0: the fleet needs at least one host"),
])
def test_bad_arguments_are_one_line_naming_the_option(parser, extra,
                                                      message):
    problem = _problem(parser, *extra)
    assert problem is not None and problem.startswith(message)
    assert "\n" not in problem
