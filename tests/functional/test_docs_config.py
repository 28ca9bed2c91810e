"""Every configuration example of the README and docs/ is one that
``scheduler-manage config check`` accepts, pasted as it is written.

A block marked ``<!-- config check: skip, REASON -->`` is not a scheduler
configuration file (a package's setup.cfg); one marked ``with the example
plugins`` is checked with the example plugin package installed; ``PATH
holds the next json block`` writes that block to a file and points PATH
at it.
"""

import re
from pathlib import Path

import pytest

from tests.unit.docs.fakes import Block
from tests.unit.docs.fakes import ini_blocks

BLOCKS = ini_blocks()
_HOLDS = re.compile(r"^(?P<path>\S+) holds the next (?P<lang>\w+) block$")
PLUGINS = "with the example plugins"


def _config(block: Block, tmp_path: Path) -> Path:
    text = block.text
    if block.marker and (holds := _HOLDS.match(block.marker)):
        content = next(body for lang, body in block.following
                       if lang == holds["lang"])
        target = tmp_path / Path(holds["path"]).name
        target.write_text(content)
        assert holds["path"] in text, block.name
        text = text.replace(holds["path"], str(target))
    config = tmp_path / "example.conf"
    config.write_text(text)
    return config


def _check(run_console_script, config: Path,
           env: dict[str, str] | None = None) -> None:
    result = run_console_script("scheduler-manage", "config", "check",
                                config_file=config, env=env)
    assert (result.returncode, result.stdout) == (0, "configuration OK\n"), \
        result.stdout + result.stderr


def test_markers_are_known():
    for block in BLOCKS:
        assert block.marker is None or block.marker.startswith(
            "skip, ") or block.marker == PLUGINS or _HOLDS.match(
            block.marker), block.name


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.marker is None or _HOLDS.match(
        b.marker)], ids=lambda b: b.name)
def test_documented_config_passes_config_check(block, run_console_script,
                                               tmp_path):
    _check(run_console_script, _config(block, tmp_path))


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.marker == PLUGINS],
                         ids=lambda b: b.name)
def test_plugin_config_passes_config_check_with_the_plugins(
        block, run_console_script, tmp_path, plugin_env):
    _check(run_console_script, _config(block, tmp_path), env=plugin_env)
