"""The differences the ported cases name are the rows of the operator
guide's "Differences from Nova" table, no more and no fewer."""

import pathlib
import re

from tests.unit.nova_peer.support import DIFFERENCES

GUIDE = (pathlib.Path(__file__).parents[3] / "docs" / "operator-guide.md")


def _table_rows() -> list[str]:
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("\n## Differences from Nova\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z-]+)` \|", section, flags=re.MULTILINE)


def test_every_named_difference_is_documented():
    assert sorted(_table_rows()) == sorted(DIFFERENCES)
