"""What the console scripts say about themselves: ``--version`` and
``--help``, as an operator runs them."""

import pytest

SCRIPTS = ("scheduler-manage", "scheduler-service", "compute-monitor")


@pytest.mark.parametrize("script", SCRIPTS)
def test_version(script, run_console_script):
    result = run_console_script(script, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{script} (metrics-scheduler) ")
    assert result.stdout.split()[-1][0].isdigit()
