"""What the console scripts say about themselves: ``--version`` and
``--help``, as an operator runs them."""

import re

import pytest

from tests.functional.rpc_harness import SERVING
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


@pytest.mark.parametrize("script, says", [
    ("compute-monitor", ("Measure this compute node", "[compute_monitor] "
                         "monitors", "/etc/compute_monitor/"
                         "compute_monitor.conf")),
    ("scheduler-service", ("Serve the scheduler's RPC API", "[DEFAULT] "
                           "transport_url", "/etc/scheduler/scheduler.conf")),
    ("scheduler-manage", ("Operator commands", "metrics", "config",
                          "/etc/scheduler/scheduler.conf")),
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
