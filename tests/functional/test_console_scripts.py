"""What the console scripts say about themselves: ``--version`` and
``--help``, as an operator runs them."""

import re
import subprocess

import pytest
import sqlalchemy as sa

from scheduler.db import models
from tests.functional.processes import console_script
from tests.functional.rpc_harness import SERVING
from tests.functional.rpc_harness import node
from tests.functional.rpc_harness import wait_for_log

SCRIPTS = ("scheduler-manage", "scheduler-service", "compute-monitor")


@pytest.mark.parametrize("script", SCRIPTS)
def test_version(script, run_console_script):
    result = run_console_script(script, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{script} (metrics-scheduler) ")
    assert result.stdout.split()[-1][0].isdigit()


MISSPELT = {"filter_scheduler": {"host_subset_sise": 2},
            "metric": {"required": "false"},
            "compute_monitor": {"intervall": 5}}
WARNINGS = [
    "WARNING scheduler.cmd.unknown_options [-] Unknown option "
    "host_subset_sise in [filter_scheduler] of {path}, ignored; did you "
    "mean 'host_subset_size'?",
    "WARNING scheduler.cmd.unknown_options [-] Unknown group [metric] in "
    "{path}, ignored; did you mean 'metrics'?",
    "WARNING scheduler.cmd.unknown_options [-] Unknown option intervall in "
    "[compute_monitor] of {path}, ignored; did you mean 'interval'?",
]


def _warnings(stderr: str, path) -> list[str]:
    return [line.split(" ", 3)[3] for line in stderr.splitlines()
            if "scheduler.cmd.unknown_options" in line] == [
        warning.format(path=path) for warning in WARNINGS]


def test_agent_warns_about_misspelt_options(sqlite_url, write_config,
                                            run_console_script):
    config = write_config({"database": {"connection": sqlite_url},
                           **MISSPELT})
    assert run_console_script("scheduler-manage", "db", "sync",
                              config_file=config).returncode == 0
    result = run_console_script("compute-monitor", "--once",
                                config_file=config)
    assert result.returncode == 0, result.stderr
    assert _warnings(result.stderr, config), result.stderr


def test_service_warns_about_misspelt_options(sqlite_url, write_config,
                                              start_console_script):
    config = write_config({"DEFAULT": {"transport_url": "kombu+memory:////"},
                           "database": {"connection": sqlite_url},
                           **MISSPELT})
    service = start_console_script("scheduler-service", config_file=config)
    stderr = wait_for_log(lambda: service.stderr, SERVING,
                          process=service.popen)
    assert service.stop() == 0
    assert _warnings(stderr, config), stderr


def test_manage_warns_about_misspelt_options(sqlite_url, write_config,
                                             run_console_script):
    # Issue 30: db sync said nothing and hosts list / explain ran on the
    # defaults (MetricsWeigher left out) without a word.
    config = write_config({"database": {"connection": sqlite_url},
                           **MISSPELT})
    for command in (("db", "sync"), ("hosts", "list"), ("explain",)):
        result = run_console_script("scheduler-manage", *command,
                                    config_file=config)
        assert result.returncode == 0, result.stderr
        assert _warnings(result.stderr, config), result.stderr
        if command == ("db", "sync"):
            # A node to list and explain on (an empty fleet is an error).
            engine = sa.create_engine(sqlite_url)
            with engine.begin() as connection:
                connection.execute(models.ComputeNode.__table__.insert(),
                                   [node("n1", 8192, {"cpu.percent": 5})])
            engine.dispose()


@pytest.mark.parametrize("script", ["scheduler-service", "compute-monitor",
                                    "scheduler-manage"])
def test_strict_refuses_misspelt_options(script, sqlite_url, write_config,
                                         run_console_script):
    config = write_config({"DEFAULT": {"transport_url": "kombu+memory:////"},
                           "database": {"connection": sqlite_url},
                           "filter_scheduler": {"weight_clases": "x"}})
    command = ("db", "sync") if script == "scheduler-manage" else ()
    result = run_console_script(script, "--strict", *command,
                                config_file=config)
    assert result.returncode == 2, result
    assert result.stderr == (
        f"{script}: error: unknown options refused by --strict (strict = "
        f"true): [filter_scheduler] weight_clases of {config} (did you "
        "mean 'weight_classes'?)\n")


@pytest.mark.parametrize("script, says", [
    ("compute-monitor", ("Measure this compute node", "[compute_monitor] "
                         "monitors", "/etc/compute_monitor/"
                         "compute_monitor.conf")),
    ("scheduler-service", ("Serve the scheduler's RPC API", "[DEFAULT] "
                           "transport_url", "/etc/scheduler/scheduler.conf")),
    ("scheduler-manage", ("Operator commands", "metrics", "config",
                          "/etc/scheduler/scheduler.conf")),
    ("scheduler-api", ("auth_strategy: http_basic (the default",
                       "http_basic_auth_user_file", "keystone", "noauth",
                       "--config-file examples/api/noauth.conf",
                       "docs/api.md")),
])
def test_help_says_what_the_program_does(script, says, run_console_script):
    result = run_console_script(script, "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    for phrase in says:
        assert phrase in text


def test_manage_without_a_command_lists_them(run_console_script):
    result = run_console_script("scheduler-manage")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0] == "scheduler-manage: error: name a command:"
    assert {line.split()[0] for line in lines[1:-1]} >= {
        "db", "hosts", "explain", "balance", "metrics", "config", "demo"}
    assert "required: category" not in result.stderr


def test_config_file_after_the_command(sqlite_url, write_config,
                                       run_console_script):
    config = write_config({"database": {"connection": sqlite_url}})
    for args in (("db", "sync", "--config-file", str(config)),
                 ("hosts", "list", f"--config-file={config}")):
        result = run_console_script("scheduler-manage", *args)
        assert result.returncode == 0, result.stderr


def test_explain_help_gives_every_flag_a_default(run_console_script):
    result = run_console_script("scheduler-manage", "explain", "--help")
    assert result.returncode == 0, result.stderr
    flags = result.stdout.split("options:", 1)[1]
    entries = re.split(r"\n  (?=-)", flags)[1:]
    assert [entry.split()[0] for entry in entries] == [
        "-h,", "--vcpus", "--ram", "--disk", "--extra-spec", "--cluster",
        "--az", "--format"]
    for entry in entries[1:]:
        assert "(default:" in " ".join(entry.split()), entry


@pytest.mark.parametrize("args", [
    ("compute-monitor", "--once"),
    ("scheduler-manage", "hosts", "list"),
    ("scheduler-manage", "hosts", "list", "--format", "json"),
    ("scheduler-manage", "config", "check"),
])
def test_a_reader_that_goes_away_ends_output_quietly(args, sqlite_url,
                                                     write_config,
                                                     run_console_script):
    # ``| head -1`` (issue 30): a BrokenPipeError traceback before.
    config = write_config({"database": {"connection": sqlite_url}})
    assert run_console_script("scheduler-manage", "db", "sync",
                              config_file=config).returncode == 0
    assert run_console_script("compute-monitor", "--once",
                              config_file=config).returncode == 0
    command = [console_script(args[0]), "--config-file", str(config),
               *args[1:]]
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    # The reader leaves before the program writes a byte.
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr


def test_an_in_process_bus_starts_without_warnings(sqlite_url, write_config,
                                                   run_console_script,
                                                   start_console_script):
    # kombu's "No hostname was supplied" (twice) and oslo.messaging's
    # "Heartbeat support requested" are true of every in-process bus.
    config = write_config({"DEFAULT": {"transport_url": "kombu+memory:////"},
                           "database": {"connection": sqlite_url}})
    assert run_console_script("scheduler-manage", "db", "sync",
                              config_file=config).returncode == 0
    service = start_console_script("scheduler-service", config_file=config)
    stderr = wait_for_log(lambda: service.stderr, SERVING,
                          process=service.popen)
    assert service.stop() == 0
    assert " WARNING " not in stderr, stderr
