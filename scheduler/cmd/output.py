"""Rendering of CLI results as a text table, JSON or CSV."""

import csv
import io
import json
from collections.abc import Sequence

FORMATS = ("table", "json", "csv")


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value % 1 else \
            f"{value:.0f}"
    return str(value)


def table(columns: Sequence[str], rows: Sequence[Sequence]) -> str:
    """Columns padded to their widest cell, a header and a rule."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells])
              for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths,
                                                  strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths,
                                                   strict=True)).rstrip()
              for row in cells]
    return "\n".join(lines)


def render(columns: Sequence[str], rows: Sequence[Sequence], fmt: str,
           document=None) -> str:
    """``rows`` in ``fmt``; JSON prints ``document`` when given (richer
    than the rows), else a list of objects keyed by column."""
    if fmt == "json":
        if document is None:
            document = [dict(zip(columns, row, strict=True))
                        for row in rows]
        return json.dumps(document, indent=2, default=str)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        return buffer.getvalue().rstrip("\n")
    return table(columns, rows)
