"""The console scripts the functional tests run, as operators run them
(fixtures registered by ``conftest``): ``write_config`` writes an
oslo.config file, ``run_console_script`` runs a script to completion,
``start_console_script`` starts a long-running one and stops it after the
test."""

import dataclasses
import os
import subprocess
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from pathlib import Path

import pytest

from tools import service_harness

_SCRIPT_TIMEOUT = 60


ConfigWriter = Callable[..., Path]


@pytest.fixture
def write_config(tmp_path: Path) -> ConfigWriter:
    """A function writing an oslo.config file and returning its path.

    ``write_config({"database": {"connection": url}}, name="x.conf")``.
    Values may be str, int, float, bool or lists (written comma-separated).
    Unless the sections set it, ``[DEFAULT] state_path`` points into
    tmp_path, so that the started programs never write into the home
    directory of whoever runs the tests.
    """
    def write(sections: Mapping[str, Mapping[str, object]],
              name: str = "scheduler.conf") -> Path:
        sections = {section: dict(options)
                    for section, options in sections.items()}
        sections.setdefault("DEFAULT", {}).setdefault(
            "state_path", tmp_path / "state")
        path = tmp_path / name
        path.write_text(service_harness.config_text(sections))
        return path

    return write


def console_script(name: str) -> str:
    """Path of an installed console script of this venv.

    Entry points cannot be run with ``python -m``; the script pip wrote next
    to the interpreter is what operators run.
    """
    try:
        return service_harness.console_script(name)
    except RuntimeError as e:
        pytest.fail(f"{e} (the venv running pytest)", pytrace=False)


def _command(name: str, args: tuple[str, ...],
             config_file: str | os.PathLike | None) -> list[str]:
    command = [console_script(name)]
    if config_file is not None:
        command += ["--config-file", os.fspath(config_file)]
    return command + list(args)


def _environment(env: Mapping[str, str] | None) -> dict[str, str]:
    environment = dict(os.environ)
    # Output of a process killed at the end of a test must not be lost in
    # its buffers.
    environment["PYTHONUNBUFFERED"] = "1"
    environment.update(env or {})
    return environment


ScriptRunner = Callable[..., subprocess.CompletedProcess]


@pytest.fixture
def run_console_script() -> ScriptRunner:
    """A function running a console script to completion.

    ``run_console_script("scheduler-manage", "db", "sync",
    config_file=path, timeout=60, env={...})`` returns the CompletedProcess
    with text stdout and stderr; it does not check the exit status. A run
    past its timeout is killed and fails the test with its output so far.
    """
    def run(name: str, *args: str,
            config_file: str | os.PathLike | None = None,
            timeout: float = _SCRIPT_TIMEOUT,
            env: Mapping[str, str] | None = None,
            ) -> subprocess.CompletedProcess:
        command = _command(name, args, config_file)
        try:
            return subprocess.run(command, capture_output=True, text=True,
                                  timeout=timeout, env=_environment(env),
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"{' '.join(command)} did not finish in {timeout}s;"
                        f"\nstdout:\n{_text(e.stdout)}"
                        f"\nstderr:\n{_text(e.stderr)}", pytrace=False)

    return run


def _text(output: bytes | str | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


@dataclasses.dataclass
class ScriptProcess:
    """A started console script whose output goes to files.

    Files rather than pipes: a long-running service that logs more than a
    pipe buffer holds would block while the test is not reading.
    """

    command: list[str]
    popen: subprocess.Popen
    stdout_path: Path
    stderr_path: Path

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait(self, timeout: float = _SCRIPT_TIMEOUT
             ) -> subprocess.CompletedProcess:
        """Wait for exit; fails the test (after a kill) on timeout."""
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"{' '.join(self.command)} did not exit in "
                        f"{timeout}s;\nstdout:\n{self.stdout}"
                        f"\nstderr:\n{self.stderr}", pytrace=False)
        return subprocess.CompletedProcess(self.command,
                                           self.popen.returncode,
                                           self.stdout, self.stderr)

    def stop(self, timeout: float = 10) -> int:
        """SIGTERM, then SIGKILL after ``timeout``; returns the status."""
        return service_harness.stop_process(self.popen, timeout)


ScriptStarter = Callable[..., ScriptProcess]


@pytest.fixture
def start_console_script(tmp_path: Path) -> Iterator[ScriptStarter]:
    """A function starting a console script in the background.

    Same arguments as ``run_console_script`` minus ``timeout``; returns a
    ScriptProcess. Processes still running after the test are stopped.
    """
    started: list[ScriptProcess] = []

    def start(name: str, *args: str,
              config_file: str | os.PathLike | None = None,
              env: Mapping[str, str] | None = None) -> ScriptProcess:
        command = _command(name, args, config_file)
        stem = tmp_path / f"{name}-{len(started)}"
        stdout_path = stem.with_suffix(".stdout")
        stderr_path = stem.with_suffix(".stderr")
        with open(stdout_path, "wb") as stdout, \
                open(stderr_path, "wb") as stderr:
            popen = subprocess.Popen(command, stdout=stdout, stderr=stderr,
                                     stdin=subprocess.DEVNULL,
                                     env=_environment(env))
        process = ScriptProcess(command, popen, stdout_path, stderr_path)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


def run_manage(run_console_script: ScriptRunner,
               config: str | os.PathLike, *args: str
               ) -> subprocess.CompletedProcess:
    """``scheduler-manage ARGS`` on ``config``, run to completion."""
    return run_console_script("scheduler-manage", *args, config_file=config)

