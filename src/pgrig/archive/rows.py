"""Between records and rows: how a RunRecord, its scripts and tags and a StudyRecord become rows
of the archive's tables and come back, how blobs and series are encoded, how a run filter and
an order become SQL clauses, and the statuses a run or a study may have. Pure functions: no
connection, no transaction (those are the store's, archive/store.py).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, CursorResult, RowMapping, exists

from pgrig.archive.export import SCRIPT_FIGURES, script_figures
from pgrig.archive.models import LATENCY_COLUMNS
from pgrig.archive.models import runs as runs_t
from pgrig.archive.models import studies as studies_t
from pgrig.archive.models import tags as tags_t
from pgrig.archive.records import (
    LATENCY_FIELDS,
    LatencyStats,
    RunFilter,
    RunRecord,
    ScriptResult,
    StudyRecord,
)
from pgrig.errors import PgrigError
from pgrig.record.doc_read import read_document
from pgrig.record.documents import HostDoc, InsightsDoc, RunExtra, SettingDoc, StudyExtra
from pgrig.record.json_values import JsonValue
from pgrig.record.run import SeriesColumns

RUN_STATUSES = ("running", "ok", "failed", "aborted", "lost")
# What `pgrig runs mark` may set: the ends of a run pgrig could not record itself.
MARKABLE_STATUSES = ("aborted", "failed", "lost")
STUDY_STATUSES = ("running", "done", "interrupted", "failed")
COMPRESS_ABOVE = 256  # bytes of JSON; smaller documents are stored as plain JSON

RECORD_FIELDS = {f.name for f in fields(RunRecord)}
# Columns of `runs` that map 1:1 onto a RunRecord field of the same name.
PLAIN_COLUMNS = tuple(
    c.name
    for c in runs_t.columns
    if c.name in RECORD_FIELDS and c.name not in ("id", "started_at", "ended_at")
)
LEASE_COLUMNS = ("lease_host", "lease_pid", "lease_pid_started", "heartbeat_at")
LIGHT_COLUMNS = (
    *(c for c in runs_t.columns if c.name not in LEASE_COLUMNS),
    studies_t.c.name.label("study_name"),
)

# --- encoding of blobs and series --------------------------------------------------------------


def encode(obj: object) -> tuple[str, bytes]:
    raw = json.dumps(obj, separators=(",", ":"), default=str).encode()
    if len(raw) < COMPRESS_ABOVE:
        return "json", raw
    return "zlib-json", zlib.compress(raw, 1)  # 4.5x on series at ~6x the speed of level 6


def decode(codec: str, data: bytes) -> JsonValue:
    if codec == "zlib-json":
        data = zlib.decompress(data)
    elif codec != "json":
        raise PgrigError(f"archive holds data in an unknown encoding {codec!r}: upgrade pgrig")
    loaded: JsonValue = json.loads(data)
    return loaded


# --- conversions between records and rows --------------------------------------------------


def db_time(dt: datetime | None, sqlite: bool) -> datetime | None:
    """UTC for storage; naive input is taken as local time. SQLite stores naive UTC text."""
    if dt is None:
        return None
    dt = dt.astimezone(UTC)
    return dt.replace(tzinfo=None) if sqlite else dt


def record_time(dt: datetime | None) -> datetime | None:
    if dt is None:
        return None
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def host_summary(host: Mapping[str, object]) -> tuple[str | None, int | None]:
    """Host name and logical CPU count from the host facts, whatever key the sampler used
    (HostDoc's, or an older pgrig's: host_name, cpu_logical...)."""
    name = next((host[k] for k in ("hostname", "host_name", "name") if host.get(k)), None)
    found = next(
        (host[k] for k in ("cpus", "cpu_logical", "cpu_count", "logical_cpus") if host.get(k)),
        None,
    )
    try:
        cpus = int(found) if isinstance(found, int | float | str) else None
    except ValueError:
        cpus = None
    return (str(name) if name is not None else None), cpus


def check_status(status: str) -> None:
    if status not in RUN_STATUSES:
        raise PgrigError(
            f"unknown run status {status!r}: expected one of {', '.join(RUN_STATUSES)}"
        )


def run_row(rec: RunRecord, study_id: int | None, sqlite: bool) -> dict[str, object]:
    row: dict[str, object] = {name: getattr(rec, name) for name in PLAIN_COLUMNS}
    row["started_at"] = db_time(rec.started_at, sqlite)
    row["ended_at"] = db_time(rec.ended_at, sqlite)
    row["study_id"] = study_id
    for col, f in zip(LATENCY_COLUMNS, LATENCY_FIELDS, strict=True):
        row[col] = getattr(rec.latency, f)
    row["host_name"], row["host_cpus"] = host_summary(rec.host)
    return row


def inserted_id(result: CursorResult[tuple[object, ...]]) -> int:
    """The primary key of the one row an INSERT made."""
    key = result.inserted_primary_key
    if key is None:
        raise PgrigError("the archive did not return the new row's id")
    return int(key[0])


def record_from_row(row: RowMapping) -> RunRecord:
    """A light record: scalars only (tags, scripts, blobs and series are loaded separately)."""
    rec = RunRecord(**{name: row[name] for name in PLAIN_COLUMNS})
    rec.id = row["id"]
    rec.managed = bool(row["managed"])
    rec.started_at = record_time(row["started_at"])
    rec.ended_at = record_time(row["ended_at"])
    rec.study = row["study_name"]
    rec.latency = LatencyStats(
        **{f: row[c] for c, f in zip(LATENCY_COLUMNS, LATENCY_FIELDS, strict=True)}
    )
    # Light records carry the host summary under canonical keys; get_run replaces it with the
    # full host facts as they were recorded.
    listed = {k: v for k, v in (("hostname", row["host_name"]), ("cpus", row["host_cpus"])) if v}
    rec.host = cast(HostDoc, listed)  # what a list of runs keeps of the host
    return rec


def script_row(run_id: int, s: ScriptResult) -> dict[str, object]:
    row: dict[str, object] = {"run_id": run_id, **script_figures(s)}
    for col, f in zip(LATENCY_COLUMNS, LATENCY_FIELDS, strict=True):
        row[col] = getattr(s.latency, f)
    return row


def script_from_row(row: RowMapping) -> ScriptResult:
    return ScriptResult(
        **{name: row[name] for name in SCRIPT_FIGURES},
        latency=LatencyStats(
            **{f: row[c] for c, f in zip(LATENCY_COLUMNS, LATENCY_FIELDS, strict=True)}
        ),
    )


def study_from_row(row: RowMapping) -> StudyRecord:
    return StudyRecord(
        id=row["id"],
        name=row["name"],
        kind=row["kind"],
        spec=row["spec"],
        status=row["status"],
        created_at=record_time(row["created_at"]),
        extra=_without_lease(json.loads(row["extra"]) if row["extra"] else {}),
    )


STUDY_LEASE = "lease"  # a running study's extra: its process (archive/studies.py), not shown


def _without_lease(stored: JsonValue) -> StudyExtra:
    """The study's extra, validated once here (record/doc_read.py), without its lease."""
    if isinstance(stored, dict):
        stored.pop(STUDY_LEASE, None)
    return read_document(StudyExtra, stored)


def filter_clauses(flt: RunFilter | None) -> list[ColumnElement[bool]]:
    if flt is None:
        return []
    where: list[ColumnElement[bool]] = []
    if flt.env_name is not None:
        where.append(runs_t.c.env_name == flt.env_name)
    if flt.status is not None:
        check_status(flt.status)
        where.append(runs_t.c.status == flt.status)
    if flt.study is not None:
        where.append(studies_t.c.name == flt.study)
    if flt.workload is not None:
        where.append(runs_t.c.workload == flt.workload)
    if flt.server_major is not None:
        where.append(runs_t.c.server_major == flt.server_major)
    if flt.tag is not None:
        key, value = flt.tag
        where.append(
            exists().where(
                tags_t.c.run_id == runs_t.c.id, tags_t.c.key == key, tags_t.c.value == value
            )
        )
    if flt.text:
        pattern = "%" + flt.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append(runs_t.c.note.ilike(pattern, escape="\\"))
    return where


def order_clause(order: str) -> list[Any]:
    name = order.lstrip("+-")
    if name not in runs_t.c:
        raise PgrigError(
            f"cannot order runs by {name!r}: use a column such as id, started_at, tps "
            "(prefix - for descending)"
        )
    col = runs_t.c[name]
    desc = order.startswith("-")
    primary = col.desc() if desc else col.asc()
    if name == "id":
        return [primary]
    # NULLs last either way; id breaks ties so paging is stable.
    return [col.is_(None), primary, runs_t.c.id.desc() if desc else runs_t.c.id.asc()]


# what run lists show besides the columns: warnings, a backup run's figures, its load, a
# TPC-H run's figures (its headline: record/figures.headline), the changes forced under a run
LIGHT_EXTRA_KEYS = ("warnings", "backup", "during", "topology", "tpch", "changed_under_run")


def artifact_map(stored: JsonValue) -> dict[str, str]:
    """A run's decoded artifacts blob as a dict of relative paths."""
    return {str(k): str(v) for k, v in stored.items()} if isinstance(stored, dict) else {}


def _settings(stored: JsonValue) -> dict[str, SettingDoc]:
    """{name: pg_settings row}: the settings blob, each row validated (record/doc_read.py)."""
    if not isinstance(stored, dict):
        return {}
    return {str(k): read_document(SettingDoc, v) for k, v in stored.items() if isinstance(v, dict)}


def _layers(stored: JsonValue) -> dict[str, dict[str, str]]:
    """{layer: {name: value}}: a run's settings layers, as text (pgrig.conf's values)."""
    if not isinstance(stored, dict):
        return {}
    return {
        str(layer): {str(k): str(v) for k, v in values.items()}
        for layer, values in stored.items()
        if isinstance(values, dict)
    }


def series_columns(stored: JsonValue) -> SeriesColumns:
    """One kind of a run's series as stored, {column: [values]}: numbers and nulls (a value of
    another JSON type, which pgrig never writes, reads as null)."""
    if not isinstance(stored, dict):
        return {}
    return {
        str(col): [v if isinstance(v, int | float) else None for v in vs]
        for col, vs in stored.items()
        if isinstance(vs, list)
    }


def set_blob(rec: RunRecord, kind: str, stored: JsonValue) -> None:
    """Give `rec` its decoded blob of `kind`, validated once here (record/doc_read.py): every
    reader of the record holds the declared shape."""
    if kind == "extra":
        rec.extra = read_document(RunExtra, stored)
    elif kind == "insights":
        rec.insights = read_document(InsightsDoc, stored)
    elif kind == "host":
        rec.host = read_document(HostDoc, stored)
    elif kind == "artifacts":
        rec.artifacts = artifact_map(stored)
    elif kind == "settings":
        rec.settings = _settings(stored)
    elif kind == "settings_layers":
        rec.settings_layers = _layers(stored)
    else:
        raise ValueError(f"unknown blob kind {kind!r}")


def tag_rows(run_id: int, tags: Mapping[str, str]) -> list[dict[str, int | str]]:
    return [{"run_id": run_id, "key": str(k), "value": str(v)} for k, v in tags.items()]
