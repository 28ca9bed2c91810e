"""Helpers shared by the documentation tests: the blocks of the docs pages."""

import pathlib
import re
import typing

ROOT = pathlib.Path(__file__).resolve().parents[3]


DOCS = ROOT / "docs"


PAGES = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]


_BLOCK = re.compile(r"^(?:<!-- config check: (?P<marker>.+?) -->\n)?"
                    r"```(?P<lang>\w*)\n(?P<text>.*?)^```$",
                    re.MULTILINE | re.DOTALL)


class Block(typing.NamedTuple):
    page: pathlib.Path
    line: int
    marker: str | None
    text: str
    #: Language and text of the fenced blocks after this one.
    following: list[tuple[str, str]]

    @property
    def name(self) -> str:
        return f"{self.page.name}:{self.line}"


def ini_blocks() -> list[Block]:
    """Every ```ini block of the README and docs/."""
    blocks = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        fenced = list(_BLOCK.finditer(text))
        for i, match in enumerate(fenced):
            if match["lang"] == "ini":
                blocks.append(Block(
                    page, text.count("\n", 0, match.start("lang")) + 1,
                    match["marker"], match["text"],
                    [(m["lang"], m["text"]) for m in fenced[i + 1:]]))
    return blocks


def client_examples() -> list[tuple[str, str]]:
    """(page name, code) of every ```python block calling SchedulerAPI."""
    return [(page.name, block["text"]) for page in PAGES
            for block in _BLOCK.finditer(page.read_text(encoding="utf-8"))
            if block["lang"] == "python" and "SchedulerAPI(" in block["text"]]
