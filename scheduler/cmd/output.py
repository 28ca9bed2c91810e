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


def explain(document: dict, fmt: str) -> str:
    """An explain result (``Decision.as_dict()``, as returned over RPC):
    one row per host marking the chosen host, the alternates and, for
    each removed host, the filter and its reason."""
    if fmt == "json":
        return json.dumps(document, indent=2, default=str)
    selected = document["selected"]
    roles = dict.fromkeys(selected[1:], "alternate")
    if selected:
        roles[selected[0]] = "chosen"
    weighers = list(dict.fromkeys(
        name for host in document["hosts"] for name in host["weights"]))
    columns = ["host", "result", "weight", *weighers, "filtered_by",
               "reason"]
    rows = []
    for host in document["hosts"]:
        reason = host["reason"]
        if host.get("detail"):
            reason = f"{reason}: {host['detail']}"
        role = ("filtered" if host["filtered_by"]
                else roles.get(host["host"], "candidate"))
        rows.append([host["host"], role, host["weight"],
                     *[(host["weights"].get(name) or {}).get("normalized")
                       for name in weighers],
                     host["filtered_by"], reason])
    text = table(columns, rows)
    if document.get("summary"):
        text += f"\n\nNo valid host: {document['summary']}"
    return text
