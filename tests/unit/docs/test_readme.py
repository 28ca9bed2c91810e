"""The README's quick start: two copy-pasteable commands that work on a
fresh Debian machine, and the one CI runs is the one the README gives."""

import re

from tests.unit.docs.fakes import ROOT

_SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def quick_start_commands() -> list[str]:
    """The shell blocks of the README's quick start section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in _SH_BLOCK.findall(section)]


def test_quick_start_installs_only_into_a_virtual_environment():
    # Debian 12's Python refuses `pip install` outside a virtual
    # environment (externally-managed-environment, PEP 668).
    commands = quick_start_commands()
    main_job, tests = commands[0], commands[1]
    for command in (main_job, tests):
        assert "\n" not in command, command
        steps = [step.strip() for step in command.split("&&")]
        first_pip = next(i for i, step in enumerate(steps)
                         if step.startswith("pip "))
        assert steps[0].startswith("python3 -m venv "), command
        assert any(step.startswith(". ") and step.endswith("/bin/activate")
                   for step in steps[:first_pip]), command
    assert main_job.endswith("scheduler-manage demo")
    assert tests.endswith("tox -e pep8,py3,functional")


def test_ci_runs_the_readme_test_command_verbatim():
    tests = quick_start_commands()[1]
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert tests in ci_lines
