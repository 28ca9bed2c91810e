"""Text tables for people: the CLI's tables, the debug cost table and the
benchmarks' summaries all pad their columns here."""

from collections.abc import Container
from collections.abc import Sequence


def render(rows: Sequence[Sequence[str]], *, rule: bool = False,
           right: Container[int] = ()) -> str:
    """``rows`` (the first one the header) in columns padded to their
    widest cell, two spaces apart, each line without trailing blanks.

    ``rule`` puts a dashed line as wide as each column under the header;
    the columns whose index is in ``right`` are right-aligned (numbers).
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()

    lines = [line(row) for row in rows]
    if rule:
        lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
