"""Rendering of CLI results as a text table, JSON or CSV.

Host records are built from ``HostState`` objects by
``scheduler.hosts.records`` (which the API's /v1/hosts shares), so
that the renderers can be tested on fixed host states without a
database.
"""

import csv
import io
import json
from collections.abc import Sequence

from scheduler.common import text_table
from scheduler.hosts.records import HOST_FIELDS

FORMATS = ("table", "json", "csv")

#: Marks of the explain table's first column.
CHOSEN = "*"
ALTERNATE = "alt"
#: The explain table's policy line when no cluster policy applies.
NO_POLICY = ("none (the [filter_scheduler] filters and weighers, "
             "[scheduler] default_policy unset)")

def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        # -1 x 0.0 is -0.0, which would print as "-0".
        value += 0.0
        return f"{value:.3f}".rstrip("0").rstrip(".") if value % 1 else \
            f"{value:.0f}"
    return str(value)


def table(columns: Sequence[str], rows: Sequence[Sequence]) -> str:
    """Columns padded to their widest cell, a header and a rule."""
    return text_table.render(
        [list(columns), *([_cell(v) for v in row] for row in rows)],
        rule=True)


def _csv(columns: Sequence[str], rows: Sequence[Sequence]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buffer.getvalue().rstrip("\n")


def _json(document) -> str:
    return json.dumps(document, indent=2, default=str)


def render(columns: Sequence[str], rows: Sequence[Sequence], fmt: str,
           document=None) -> str:
    """``rows`` in ``fmt``; JSON prints ``document`` when given (richer
    than the rows), else a list of objects keyed by column."""
    if fmt == "json":
        if document is None:
            document = [dict(zip(columns, row, strict=True))
                        for row in rows]
        return _json(document)
    if fmt == "csv":
        return _csv(columns, rows)
    return table(columns, rows)


def _state_cell(record: dict) -> str:
    if record["disabled_reason"]:
        return f"{record['state']} ({record['disabled_reason']})"
    return record["state"]


def _pending_cell(record: dict) -> str | None:
    if not record["pending_claims"]:
        return None
    count = record["pending_claims"]
    return (f"{count} claim{'s' if count > 1 else ''}: "
            f"{record['pending_vcpus']} vCPU "
            f"{_cell(record['pending_ram_mb'])} MB")


def _free_of_total(record: dict, resource: str) -> str:
    return (f"{_cell(record[resource + '_free'])}/"
            f"{_cell(record[resource + '_total'])}")


def hosts(records: Sequence[dict], fmt: str) -> str:
    """``hosts list``: JSON and CSV carry every field of ``HOST_FIELDS``;
    the table folds free/total into one cell, shows the nodename only
    where it differs from the host and a disabled host's reason."""
    if fmt == "json":
        return _json(list(records))
    if fmt == "csv":
        return _csv(HOST_FIELDS,
                    [[r[f] for f in HOST_FIELDS] for r in records])
    columns = ["host", "nodename", "cluster", "az", "vcpus", "ram_mb",
               "disk_gb", "pending", "instances", "metrics",
               "metric_age_s", "state"]
    rows = [[r["host"],
             None if r["nodename"] == r["host"] else r["nodename"],
             r["cluster"], r["availability_zone"],
             _free_of_total(r, "vcpus"), _free_of_total(r, "ram_mb"),
             _free_of_total(r, "disk_gb"), _pending_cell(r),
             r["instances"], r["metrics"], r["metric_age_s"],
             _state_cell(r)] for r in records]
    return table(columns, rows)


_METRIC_COLUMNS = ("name", "value", "adjusted", "age_s", "source")
#: ``hosts show`` lists, with the kind of their CSV rows.
_DETAIL_LISTS = (("bad_metrics", "bad_metric"), ("networks", "network"),
                 ("instances", "instance"), ("server_groups", "server_group"))


def _detail_csv(detail: dict) -> str:
    """Long form: one row per field, metric, cpu_info key and list item,
    ``kind`` telling which."""
    columns = ("kind", *_METRIC_COLUMNS)
    blank = [None] * (len(_METRIC_COLUMNS) - 2)
    rows = [["field", field, detail[field], *blank]
            for field in HOST_FIELDS if field not in ("metrics", "instances")]
    rows += [["metric", *(m[c] for c in _METRIC_COLUMNS)]
             for m in detail["metrics"]]
    rows += [["cpu_info", key, json.dumps(value), *blank]
             for key, value in sorted(detail["cpu_info"].items())]
    rows += [[kind, None, item, *blank]
             for field, kind in _DETAIL_LISTS for item in detail[field]]
    return _csv(columns, rows)


def _listed(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "-"


def host(detail: dict, fmt: str) -> str:
    """``hosts show`` for one ``host_detail()`` document."""
    if fmt == "json":
        return _json(detail)
    if fmt == "csv":
        return _detail_csv(detail)
    summary = {**detail, "metrics": len(detail["metrics"]),
               "instances": len(detail["instances"])}
    width = max(len(f) for f in HOST_FIELDS)
    lines = [f"{field.ljust(width)}  {_cell(summary[field])}"
             for field in HOST_FIELDS]
    lines += ["", table(_METRIC_COLUMNS,
                        [[m[c] for c in _METRIC_COLUMNS]
                         for m in detail["metrics"]]), ""]
    lines += [f"bad metrics: {_listed(detail['bad_metrics'])}",
              f"cpu_info: {json.dumps(detail['cpu_info'], sort_keys=True)}",
              f"networks: {_listed(detail['networks'])}",
              f"instances: {_listed(detail['instances'])}",
              f"server groups: {_listed(detail['server_groups'])}"]
    return "\n".join(lines)


#: The parts of a weigher's term in the explain CSV, in column order.
_TERM_PARTS = ("raw", "normalized", "weighted")


def _explain_rows(document: dict) -> tuple[list[str], list[list]]:
    """Columns and rows shared by the explain table and CSV: the mark,
    the host, the total weight, per weigher the raw weight, the
    normalised one and what it added to the total (normalised x
    multiplier), and the filter, reason and detail of a removed host."""
    selected = document["selected"]
    marks = dict.fromkeys(selected[1:], ALTERNATE)
    if selected:
        marks[selected[0]] = CHOSEN
    weighers = list(dict.fromkeys(
        name for host in document["hosts"] for name in host["weights"]))
    columns = ["sel", "host", "weight",
               *[f"{name}.{part}" for name in weighers
                 for part in _TERM_PARTS],
               "filtered_by", "reason", "detail"]
    rows = []
    for host in document["hosts"]:
        terms = [(host["weights"].get(name) or {}) for name in weighers]
        rows.append([
            "" if host["filtered_by"] else marks.get(host["host"], ""),
            host["host"], host["weight"],
            *[term.get(part) for term in terms for part in _TERM_PARTS],
            host["filtered_by"], host["reason"], host.get("detail")])
    return columns, rows


def _weigher_of(column: str) -> str:
    """``RAMWeigher`` of ``RAMWeigher.weighted``; other columns as they
    are."""
    name, dot, part = column.rpartition(".")
    return name if dot and part in _TERM_PARTS else column


def _multipliers(document: dict) -> dict[str, float]:
    """Each weigher's multiplier in this decision (the same for every
    host); empty from a service older than the ``multiplier`` key."""
    found: dict[str, float] = {}
    for host in document["hosts"]:
        for name, term in host["weights"].items():
            if term.get("multiplier") is not None:
                found.setdefault(name, term["multiplier"])
    return found


def _explain_heading(document: dict) -> list[str]:
    """Which cluster policy decided and how the weight is summed."""
    lines = []
    if "policy" in document:
        lines.append(f"Policy: {document['policy'] or NO_POLICY}")
    multipliers = _multipliers(document)
    if multipliers:
        lines.append("Weight: the sum of each weigher's normalised weight "
                     "x its multiplier (shown per weigher): " + ", ".join(
                         f"{name} x{_cell(float(multiplier))}"
                         for name, multiplier in multipliers.items()))
    return lines


def explain(document: dict, fmt: str) -> str:
    """An explain result (``Decision.as_dict()`` plus the ``policy``, as
    returned over RPC): one row per host marking the chosen host (``*``),
    the alternates (``alt``) and, for each removed host, the filter, its
    reason and detail. The table starts with the cluster policy and the
    weighers' multipliers and shows what each weigher added to the
    weight (the raw and normalised weights are in JSON and CSV); it ends
    with the NoValidHost histogram when nothing fits. The warnings about
    the request are JSON's only: the command prints them on stderr."""
    if fmt == "json":
        return _json(document)
    columns, rows = _explain_rows(document)
    if fmt == "csv":
        return _csv(columns, rows)
    # Older services have no weighted part: their normalised one then.
    shown = [i for i, c in enumerate(columns) if not c.endswith(
        (".raw", ".normalized" if _multipliers(document) else ".weighted"))]
    text = table([_weigher_of(columns[i]) for i in shown],
                 [[row[i] for i in shown] for row in rows])
    text = "\n".join([*_explain_heading(document), text])
    if document.get("summary"):
        text += f"\n\nNo valid host: {document['summary']}"
    return text


MIGRATION_COLUMNS = ("cluster", "cluster_policy", "instance_uuid",
                     "source_host", "dest_host", "vcpus", "load_vcpus",
                     "load_source", "state", "uuid")


def migrations(planned: Sequence[dict], fmt: str, dry_run: bool) -> str:
    """The migrations of a balancing tick (``PlannedMigration.as_dict()``
    each); JSON gives the dicts whole."""
    if fmt == "json":
        return _json(list(planned))
    # .get: the load (docs/operator-guide.md) is missing from older services'
    # answers.
    rows = [[m.get(column) for column in MIGRATION_COLUMNS]
            for m in planned]
    if fmt == "csv":
        return _csv(MIGRATION_COLUMNS, rows)
    if not planned:
        return "No migration planned."
    text = table(MIGRATION_COLUMNS, rows)
    if dry_run:
        text += "\n\nDry run: nothing was claimed or recorded."
    return text

