"""The example plugin package built and installed where the programs the
tests start find it (``plugin_env``: a fixture registered by
``conftest``)."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = (Path(__file__).resolve().parents[2] / "examples"
           / "scheduler-example-plugins")


_BUILD_TIMEOUT = 120


def _can_build_offline() -> bool:
    # setuptools builds wheels by itself from 70.1 on; before, it needs
    # the wheel package.
    return (importlib.util.find_spec("setuptools") is not None
            and (importlib.util.find_spec("setuptools.command.bdist_wheel")
                 is not None
                 or importlib.util.find_spec("wheel") is not None))


def install_package(source: Path, work: Path) -> dict[str, str]:
    """Build and install the plugin package at ``source`` into a
    directory under ``work``; the environment variables under which the
    programs see it. Skips (fails in CI) when it cannot be built
    offline."""
    if not _can_build_offline():
        message = ("building plugin packages offline needs setuptools "
                   ">= 70.1, or setuptools and wheel, in the test "
                   "interpreter (tox -e functional has them)")
        from tests.functional import conftest  # imports this module
        if conftest.in_ci():
            pytest.fail(f"CI=true: {message}", pytrace=False)
        pytest.skip(message)
    # A copy: pip builds a local directory in place, and build/ and
    # *.egg-info must not appear in the repository.
    copy = shutil.copytree(source, work / "source")
    site = work / "site"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps",
         "--no-build-isolation", "--no-index", "--disable-pip-version-check",
         "--target", str(site), str(copy)],
        capture_output=True, text=True, timeout=_BUILD_TIMEOUT,
        stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    assert list(site.glob("*.dist-info"))
    path = os.pathsep.join(filter(None, [str(site),
                                         os.environ.get("PYTHONPATH")]))
    return {"PYTHONPATH": path}


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory) -> dict[str, str]:
    """Environment variables under which the programs see the installed
    example package."""
    env = install_package(EXAMPLE, tmp_path_factory.mktemp("example-plugins"))
    site = Path(env["PYTHONPATH"].split(os.pathsep)[0])
    assert list(site.glob("scheduler_example_plugins-*.dist-info"))
    return env
