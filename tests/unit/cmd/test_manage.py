"""``scheduler-manage``'s parser: what building it imports, and the order
of its top-level help."""

import json
import subprocess
import sys

import pytest

from scheduler.cmd import demo

#: Modules only the commands that use them may import (issue 30: 1.8 s of
#: CPU before --version printed anything).
HEAVY = ("sqlalchemy", "alembic", "numpy", "oslo_messaging", "eventlet",
         "psutil", "jsonschema", "scheduler.engine", "scheduler.db.api")

_PROBE = """
import contextlib, io, json, sys
from scheduler.cmd import manage
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        manage.main({argv!r})
    except SystemExit:
        pass
json.dump({{"modules": sorted(sys.modules), "out": out.getvalue()}},
          sys.__stdout__)
"""


def _run(argv: list[str]) -> dict:
    """``scheduler-manage argv`` in a fresh interpreter: its output and
    every module it imported."""
    done = subprocess.run([sys.executable, "-c", _PROBE.format(argv=argv)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("argv", [["--version"], ["--help"],
                                  ["hosts", "list", "--help"],
                                  ["simulate", "--help"]])
def test_parser_imports_no_database_engine_or_service(argv):
    imported = _run(argv)["modules"]
    assert [m for m in HEAVY if m in imported] == []


def test_top_level_help_lists_the_commands_before_the_options():
    text = _run(["--help"])["out"]
    # The usage line names every option; their descriptions come after.
    assert text.index("\nCommands:") < text.index("\noptions:")
    assert text.index("\n    db ") < text.index("\n  --log-config-append")


@pytest.mark.parametrize(("argv", "says"), [
    (["db", "sync", "--help"], "newest revision"),
    (["db", "version", "--help"], "schema revision"),
    (["config", "check", "--help"], "reads the database only for"),
    (["demo", "--help"], f"$state_path/{demo.DATABASE}"),
])
def test_each_command_help_says_what_it_does(argv, says):
    text = " ".join(_run(argv)["out"].split())
    assert says in text


@pytest.mark.parametrize("argv", [["hosts", "list"], ["hosts", "show"],
                                  ["balance"], ["explain"],
                                  ["metrics", "list"],
                                  ["migration-policy", "show"]])
def test_format_option_has_help(argv):
    text = " ".join(_run([*argv, "--help"])["out"].split())
    assert "--format {table,json,csv} output format (default: table)" in text


def test_hosts_list_imports_no_service_or_monitor(tmp_path):
    config = tmp_path / "scheduler.conf"
    config.write_text(f"[database]\nconnection = sqlite:///{tmp_path}/s.db\n")
    _run(["--config-file", str(config), "db", "sync"])
    done = _run(["--config-file", str(config), "hosts", "list"])
    assert done["out"].startswith("host  nodename")
    # The demo's monitor and in-process service, config check's
    # oslo.messaging: none of them is for hosts list.
    assert [m for m in ("oslo_messaging", "eventlet", "psutil",
                        "scheduler.rpc", "compute_monitor.agent")
            if m in done["modules"]] == []
