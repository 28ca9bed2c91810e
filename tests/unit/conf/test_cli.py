"""scheduler.conf.cli: the one line of a config file that cannot be read."""

import errno

import pytest
from oslo_config import cfg

from scheduler.conf import cli


def test_a_directory_or_unreadable_file_is_one_line_and_status_2(
        tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.parse("scheduler-manage", cfg.ConfigOpts(),
                  ["--config-file", str(tmp_path)], "scheduler")
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        f"scheduler-manage: error: --config-file {tmp_path}: is a "
        "directory; expected a file (use --config-dir for a directory)\n")
    denied = PermissionError(errno.EACCES, "Permission denied", "/etc/x.conf")
    assert cli.unreadable_file_message(denied) == (
        "--config-file /etc/x.conf: permission denied; expected a readable "
        "file")
