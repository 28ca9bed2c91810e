"""docs/plugin-guide.md shows the example plugin package as it is.

Each code block of the guide captioned with a file of the package
(``[`loadavg.py`](../examples/scheduler-example-plugins/...):``) must be
that file, whole; and every file of the package must be shown. The
functional tests run the package, so the guide shows tested code.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "plugin-guide.md"
PACKAGE = ROOT / "examples" / "scheduler-example-plugins"

_CAPTIONED_BLOCK = re.compile(
    r"^\[`[^`]+`\]\(\.\./examples/scheduler-example-plugins/([^)]+)\):\n"
    r"\n```[a-z]*\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _shown() -> dict[str, str]:
    return dict(_CAPTIONED_BLOCK.findall(GUIDE.read_text()))


def test_each_captioned_block_is_its_file():
    for path, block in _shown().items():
        assert block == (PACKAGE / path).read_text(), (
            f"docs/plugin-guide.md shows an outdated {path}; paste the "
            "file again")


def test_every_file_of_the_package_is_shown():
    files = {path.relative_to(PACKAGE).as_posix()
             for pattern in ("pyproject.toml",
                             "scheduler_example_plugins/*.py")
             for path in PACKAGE.glob(pattern)}
    assert set(_shown()) == files
