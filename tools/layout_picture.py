"""Draw the rooms of ``scheduler/`` and which imports which, as the code
stands: the layers of ``.importlinter``'s ``rooms`` contract top to
bottom, an arrow for each room importing another (from the source's
imports, read with ``ast``). Writes a PNG (docs/images/layout.png) and
prints the arrows.

    python tools/layout_picture.py [--output docs/images/layout.png]
"""

import argparse
import ast
import collections
import configparser
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
from matplotlib import patches
from matplotlib import pyplot

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = "scheduler"
CONTRACT = "importlinter:contract:rooms"


def layers() -> list[list[str]]:
    """The rooms contract's layers, each a list of sibling rooms."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    rows = config[CONTRACT]["layers"].strip().splitlines()
    return [[room.strip() for room in row.split("|")] for row in rows]


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == PACKAGE and len(parts) > 1 else None


def _imported(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == PACKAGE:
                names += [f"{PACKAGE}.{a.name}" for a in node.names]
            else:
                names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def arrows() -> dict[tuple[str, str], int]:
    """(importing room, imported room) -> how many modules import so."""
    counts: dict[tuple[str, str], int] = collections.Counter()
    for path in (ROOT / PACKAGE).rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        source = _room(module.removesuffix(".__init__"))
        targets = {_room(name) for name in _imported(ast.parse(
            path.read_text(encoding="utf-8")))}
        for target in targets - {None, source}:
            if source is not None:
                counts[(source, target)] += 1
    return dict(counts)


def draw(rows: list[list[str]], edges: dict[tuple[str, str], int],
         output: pathlib.Path) -> None:
    """Arrows into the last two layers (every room may use them) are
    left out: they would hide the rest."""
    floor = {room for row in rows[-2:] for room in row}
    where = {}
    for depth, row in enumerate(rows):
        for index, room in enumerate(row):
            where[room] = ((index + 1) / (len(row) + 1), -depth)
    figure, axes = pyplot.subplots(figsize=(9, 0.8 * len(rows) + 1))
    for (source, target), count in sorted(edges.items()):
        if source in where and target in where and target not in floor:
            (x0, y0), (x1, y1) = where[source], where[target]
            axes.annotate("", (x1, y1 + 0.18), (x0, y0 - 0.18),
                          arrowprops={"arrowstyle": "->", "alpha": 0.35,
                                      "linewidth": 0.5 + 0.15 * count,
                                      "connectionstyle": "arc3,rad=0.08"})
    for room, (x, y) in where.items():
        axes.add_patch(patches.FancyBboxPatch(
            (x - 0.07, y - 0.17), 0.14, 0.34, boxstyle="round,pad=0.01",
            facecolor="#e8eef7", edgecolor="#35577d"))
        axes.text(x, y, room, ha="center", va="center", fontsize=9)
    axes.set_xlim(0, 1)
    axes.set_ylim(-len(rows) + 0.4, 0.6)
    axes.axis("off")
    axes.set_title("scheduler/: rooms top to bottom (.importlinter); "
                   "arrows: imports\n(any room may import the bottom two "
                   "rows: arrows into them not drawn)", fontsize=10)
    figure.tight_layout()
    figure.savefig(output, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=pathlib.Path,
                        default=ROOT / "docs" / "images" / "layout.png")
    args = parser.parse_args(argv)
    rows = layers()
    edges = arrows()
    known = {room for row in rows for room in row}
    for (source, target), count in sorted(edges.items()):
        flag = "" if {source, target} <= known else "  (not in a layer)"
        print(f"{source} -> {target} ({count}){flag}")
    draw(rows, edges, args.output)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
