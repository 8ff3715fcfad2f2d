"""Runs as JSON or CSV, for `pgrig runs show/export --json` and `pgrig run --json`.

JSON (`run_to_json`) is the machine-readable summary with stable keys; `export_run(rec, "json")`
adds everything else (settings, host, artifacts, extra, series). CSV is one valid table, one
row per sample of the pgbench series (one per second): t, then every column of every series kind
as "<kind>.<column>", matched to the pgbench row by t rounded to the second. The summary is not
in the CSV (it would break the table); take it from the JSON.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping
from dataclasses import fields
from typing import Any, Literal, cast

from pgrig.archive.records import RunRecord, ScriptResult
from pgrig.errors import PgrigError
from pgrig.record.json_safe import json_safe
from pgrig.record.json_values import JsonObject
from pgrig.request import LOAD_FIELDS as LOAD_PARAMETERS

__all__ = [
    "LOAD_FIELDS",
    "SCRIPT_FIGURES",
    "SERIES_KIND_ORDER",
    "export_run",
    "json_safe",
    "run_to_json",
    "script_figures",
    "series_table",
]

SERIES_KIND_ORDER = ("pgbench", "os", "pg", "pooler")
# A script's own figures, in field order: everything but its latency (kept apart everywhere).
SCRIPT_FIGURES = tuple(f.name for f in fields(ScriptResult) if f.name != "latency")

# The dataset and how it was loaded, in the order every export lists them (JSON and runs CSV):
# every load parameter of the run request but the workload (listed with the identity).
LOAD_FIELDS = (
    "scale",
    "db_size_bytes",
    *(name for name in LOAD_PARAMETERS if name != "workload"),
)
_SUMMARY_FIELDS = (
    "id",
    "status",
    "error",
    "started_at",
    "ended_at",
    "env_name",
    "study",
    "study_point",
    "repeat",
    "managed",
    "target",
    "engine",
    "server_version",
    "server_major",
    "pgbench_version",
    "database",
    "scenario",
    "workload",
    *LOAD_FIELDS,
    "note",
    "owner",
    "tags",
    "measured_s",
    "tps",
    "transactions",
    "failed",
    "retried",
    "skipped",
    "rollbacks",
)
_AFTER_LATENCY = ("cpu_user", "cpu_system", "cpu_iowait", "cpu_idle", "hit_ratio", "command")


def run_to_json(rec: RunRecord) -> JsonObject:
    """The summary of a run with stable keys: identity, target, load, results, latency in ms
    (`latency_ms`), per-script figures (`scripts`), `warnings` (what may make the numbers
    misleading, e.g. a busy host). nopm/tpm appear only when set (TPC-C)."""
    out: dict[str, Any] = {name: getattr(rec, name) for name in _SUMMARY_FIELDS}
    if rec.nopm is not None:
        out["nopm"] = rec.nopm
    if rec.tpm is not None:
        out["tpm"] = rec.tpm
    if rec.extra.get("tpcc"):
        out["tpcc"] = rec.extra["tpcc"]  # rollbacks, mix and per-type figures
    for key in ("topology", "backup", "during", "targets", "prewarm",  # replicas, backups, ...
                "wait_sampling", "figures_from", "plan_top_up", "server_log"):  # fmt: skip
        if rec.extra.get(key):
            out[key] = rec.extra[key]
    out["latency_ms"] = rec.latency.as_dict()
    for name in _AFTER_LATENCY:
        out[name] = getattr(rec, name)
    out["scripts"] = [{**script_figures(s), "latency_ms": s.latency.as_dict()} for s in rec.scripts]
    out["warnings"] = rec.warnings()  # [{"code": "busy_host", "message": ...}]
    if rec.extra.get("changed_under_run"):  # changes forced on its environment while it ran
        out["changed_under_run"] = rec.extra["changed_under_run"]
    # the server's disk limit and what the kernel held of it (None: not recorded)
    out["disk_limit"] = rec.disk_limit
    return cast(JsonObject, json_safe(out))


def script_figures(s: ScriptResult) -> dict[str, int | float | str | None]:
    """SCRIPT_FIGURES of one script, by name."""
    return {name: getattr(s, name) for name in SCRIPT_FIGURES}


def _kinds(series: Mapping[str, object]) -> list[str]:
    known = [k for k in SERIES_KIND_ORDER if k in series]
    return known + sorted(k for k in series if k not in SERIES_KIND_ORDER)


def _second(t: object) -> int | None:
    if not isinstance(t, int | float | str):
        return None
    try:
        seconds = float(t)
    except ValueError:
        return None
    return round(seconds) if math.isfinite(seconds) else None


def series_table(rec: RunRecord) -> tuple[list[str], list[list[float | None]]]:
    """The series of a run as one table: header and rows, joined on t (rounded to the second).

    Rows follow the pgbench series when there is one, otherwise the union of all seconds.
    """
    kinds = _kinds(rec.series)
    index: dict[str, dict[int, int]] = {}  # kind -> second -> row index in that kind
    for kind in kinds:
        index[kind] = {}
        for i, t in enumerate(rec.series[kind].get("t", [])):
            sec = _second(t)
            if sec is not None:
                index[kind][sec] = i  # the last sample of a second wins
    if "pgbench" in rec.series:
        base = [(t, _second(t)) for t in rec.series["pgbench"].get("t", [])]
    else:
        base = [(s, s) for s in sorted({s for k in kinds for s in index[k]})]
    header = ["run_id", "t"]
    columns: list[tuple[str, str]] = []
    for kind in kinds:
        for col in rec.series[kind]:
            if col != "t":
                columns.append((kind, col))
                header.append(f"{kind}.{col}")
    rows = []
    for t, sec in base:
        row: list[float | None] = [rec.id, t]
        for kind, col in columns:
            at = index[kind].get(sec) if sec is not None else None
            values = rec.series[kind][col]
            row.append(values[at] if at is not None and at < len(values) else None)
        rows.append(row)
    return header, rows


def _csv_value(v: float | None) -> float | str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return v


def export_run(rec: RunRecord, format: Literal["json", "csv"] = "json") -> str:
    """Everything about a run as JSON (summary, settings, host, artifacts, extra, series), or
    its series as one CSV table (see the module docstring)."""
    if format == "json":
        doc = run_to_json(rec)
        doc["non_default_settings"] = json_safe(rec.non_default_settings())
        for name in ("settings", "settings_layers", "host", "artifacts", "extra", "insights"):
            doc[name] = json_safe(getattr(rec, name))
        doc["series"] = json_safe(rec.series)
        return json.dumps(doc, indent=2) + "\n"
    if format == "csv":
        header, rows = series_table(rec)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(header)
        writer.writerows([_csv_value(v) for v in row] for row in rows)
        return buf.getvalue()
    raise PgrigError(f"unknown export format {format!r}: use json or csv")
