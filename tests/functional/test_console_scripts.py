"""What the console scripts say about themselves: ``--version`` and
``--help``, as an operator runs them."""

import pytest

from tests.functional.test_rpc_service import SERVING
from tests.functional.test_rpc_service import wait_for_log

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
