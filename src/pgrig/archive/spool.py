"""What a run keeps on disk so that nothing is lost when pgrig dies or the archive is away.

Both files live in the run's artifacts directory (<home>/artifacts/<archive key>/<run id>/,
archive/artifacts.py: a run id means something only in its archive):
- series.partial.jsonl: the per-second rows gathered so far, appended every few seconds by
  the run's heartbeat thread (one JSON line per row: {"k": kind, "r": {column: value}}). Only
  new rows are written, so each write costs what the last seconds added. A run marked "lost"
  gets these series; a run that finishes removes the file.
- record.spool.json: the complete RunRecord (blobs and series included) of a run whose end
  met an unavailable archive (SQLite locked, PostgreSQL down). It names the archive it belongs
  to (masked URL: never a password); opening that archive imports it in one transaction and
  removes the file. Importing twice writes the same rows (finish_run replaces a run's rows).
  A marker in <home>/spooled/ (<archive key>.<run id>) names each spooled run, so that every
  command finds its own archive's with one small directory listing (a glob through 10,000 run
  directories takes ~70 ms), and no command of another archive imports or deletes it.
  Markers of older pgrig versions (<run id> alone, records in <home>/artifacts/<run id>/) are
  still found; the archive URL in the record decides whose they are.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from pgrig import paths, safe_write
from pgrig.archive.artifacts import archive_key, legacy_run_dir, run_artifacts_dir
from pgrig.archive.records import LatencyStats, RunRecord, ScriptResult
from pgrig.errors import PgrigError
from pgrig.record.doc_read import read_document
from pgrig.record.documents import DiskLimitDoc, HostDoc, InsightsDoc, RunExtra
from pgrig.record.json_values import JsonObject, JsonValue
from pgrig.record.run import RunSeries
from pgrig.request.values import INT64_MAX

__all__ = [
    "PARTIAL_SERIES",
    "RECORD_SPOOL",
    "PartialSeries",
    "SpoolUnreadable",
    "forget",
    "pending_spools",
    "quarantine",
    "read_partial_series",
    "read_spool",
    "write_spool",
]

PARTIAL_SERIES = "series.partial.jsonl"
RECORD_SPOOL = "record.spool.json"
_SPOOL_FORMAT = 1


# --- partial series ----------------------------------------------------------------------------


class PartialSeries:
    """Appends the rows of each series kind that were not written yet."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / PARTIAL_SERIES
        self._written: dict[str, int] = {}

    def append(self, series: RunSeries) -> None:
        """`series`: columnar, as gathered so far ({kind: {column: [values]}}, equal lengths)."""
        lines = []
        for kind, cols in series.items():
            n = min((len(v) for v in cols.values()), default=0)
            for i in range(self._written.get(kind, 0), n):
                row = {c: v[i] for c, v in cols.items()}
                lines.append(json.dumps({"k": kind, "r": row}, separators=(",", ":"), default=str))
            self._written[kind] = max(n, self._written.get(kind, 0))
        if lines:
            with open(self.path, "a") as f:
                f.write("\n".join(lines) + "\n")

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def read_partial_series(run_id: int, *, archive: str) -> RunSeries:
    """The columnar series of a run's partial file ({} when there is none). A line cut by the
    death of the writer is skipped."""
    path = run_artifacts_dir(run_id, create=False, archive=archive) / PARTIAL_SERIES
    rows: dict[str, list[dict[str, Any]]] = {}
    try:
        with open(path) as f:
            for line in f:
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    item = json.loads(line)
                    rows.setdefault(str(item["k"]), []).append(dict(item["r"]))
    except OSError:
        return {}
    out: RunSeries = {}
    for kind, kind_rows in rows.items():
        columns = list(dict.fromkeys(c for r in kind_rows for c in r))
        out[kind] = {c: [r.get(c) for r in kind_rows] for c in columns}
    return out


# --- spooled records ---------------------------------------------------------------------------


def _encode_record(rec: RunRecord) -> dict[str, object]:
    doc = asdict(rec)
    for name in ("started_at", "ended_at"):
        value = getattr(rec, name)
        doc[name] = value.isoformat() if value is not None else None
    return doc


def _decode_record(doc: JsonObject) -> RunRecord:
    _check_shapes(doc)
    # each field's JSON type checked: from here on, the record's own fields
    fields: dict[str, Any] = dict(doc)
    for name in ("started_at", "ended_at"):
        if fields.get(name):
            fields[name] = datetime.fromisoformat(fields[name])
    fields["latency"] = LatencyStats(**fields.get("latency") or {})
    fields["scripts"] = [
        ScriptResult(**{**s, "latency": LatencyStats(**s.get("latency") or {})})
        for s in fields.get("scripts") or []
    ]
    for name, declared in _DOCUMENTS.items():  # validated once, as the archive reads them
        if name in fields:
            value = fields[name]
            fields[name] = read_document(declared, value) if value is not None else None
    return RunRecord(**fields)


_DOCUMENTS: dict[str, type] = {
    "host": HostDoc,
    "extra": RunExtra,
    "insights": InsightsDoc,
    "disk_limit": DiskLimitDoc,
}


# The shape of each field of a spooled record, as the archive's writer and every reader use it:
# a field of another JSON type (a record edited by hand, damaged, or forged) is refused here,
# with its name, instead of a traceback in the import or, once stored, in every reader of the
# run. Documents (host, extra, insights, disk_limit) are checked as objects here, then each
# declared key against its type (record/doc_read.py: a key that does not fit reads as missing).
_TEXT = (str,)
_NUMBER = (int, float)
_INT = _NUMBER  # a count written as 5.0 is stored and read as well: not worth losing a run over
_SHAPES: dict[str, tuple[type, ...]] = {
    "env_name": _TEXT, "workload": _TEXT, "clients": _INT, "threads": _INT, "status": _TEXT,
    "id": (int,), "repeat": _INT, "managed": (bool,), "engine": _TEXT, "via": _TEXT,
    "warmup_s": _NUMBER, "protocol": _TEXT, "tags": (dict,), "latency": (dict,),
    "scripts": (list,), "settings": (dict,), "settings_layers": (dict,), "host": (dict,),
    "series": (dict,), "artifacts": (dict,), "extra": (dict,), "insights": (dict,),
}  # fmt: skip
_OPTIONAL: dict[str, tuple[type, ...]] = {
    "error": _TEXT, "started_at": _TEXT, "ended_at": _TEXT, "study": _TEXT,
    "study_point": _TEXT, "target": _TEXT, "server_version": _TEXT, "server_major": _INT,
    "pgbench_version": _TEXT, "database": _TEXT, "scenario": _TEXT, "scale": _INT,
    "db_size_bytes": _INT, "duration_s": _NUMBER, "transactions_per_client": _INT,
    "rate": _NUMBER, "latency_limit_ms": _NUMBER, "max_tries": _INT, "connect": _TEXT,
    "server_cpus": _TEXT, "client_cpus": _TEXT, "defines": (dict,),
    "extra_pgbench_args": (list,), "tpcc_mix": (dict,), "all_warehouses": (bool,),
    "tpcc_stock_level": _TEXT, "keep_txlog": (bool,), "txlog": _TEXT, "command": _TEXT,
    "note": _TEXT, "owner": _TEXT, "measured_s": _NUMBER, "tps": _NUMBER,
    "transactions": _INT, "failed": _INT, "retried": _INT, "skipped": _INT,
    "rollbacks": _INT, "nopm": _NUMBER, "tpm": _NUMBER, "cpu_user": _NUMBER,
    "cpu_system": _NUMBER, "cpu_iowait": _NUMBER, "cpu_idle": _NUMBER, "hit_ratio": _NUMBER,
    "disk_limit": (dict,),
}  # fmt: skip


def _fits(value: object, types: tuple[type, ...]) -> bool:
    # JSON true/false are no numbers here (Python's bool is an int)
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))


def _wrong(name: str, value: object, want: str) -> ValueError:
    return ValueError(f"field {name!r} is a JSON {_json_kind(value)}, not {want}")


_WANTED = {int: "an integer", float: "a number", str: "text", bool: "true or false",
           dict: "an object", list: "an array"}  # fmt: skip


def _check_shapes(doc: JsonObject) -> None:
    """Raise ValueError naming the first field of a spooled record whose JSON type is not the
    one the archive stores (a number where text is, a list where an object is...)."""
    for name, value in doc.items():
        types = _SHAPES.get(name) or _OPTIONAL.get(name)
        if types is None or (value is None and name in _OPTIONAL):
            continue
        if not _fits(value, types):
            or_null = "" if name in _SHAPES else " or null"
            raise _wrong(name, value, _WANTED[types[-1]] + or_null)
    _check_integers(doc)
    _check_contents(doc)


def _check_integers(doc: JsonObject) -> None:
    """Integers as the archive's BIGINT columns hold them (a larger one was an OverflowError
    in the import); the run id a real one (at least 1). The shapes are checked already."""
    fields = [(name, v) for name, v in doc.items() if name in _SHAPES or name in _OPTIONAL]
    for i, script in enumerate(_array(doc.get("scripts"))):
        if isinstance(script, dict):
            fields += [(f"scripts[{i}].{k}", v) for k, v in script.items()]
    for name, value in fields:
        if isinstance(value, int) and not -INT64_MAX - 1 <= value <= INT64_MAX:
            raise ValueError(f"field {name!r} is {value}, beyond a 64-bit integer")
    run_id = doc.get("id", 1)
    if isinstance(run_id, int) and run_id < 1:
        raise ValueError(f"field 'id' is {run_id}: run ids start at 1")


def _object(value: JsonValue) -> JsonObject:
    """A field _check_shapes let through as an object or null: {} for null."""
    return value if isinstance(value, dict) else {}


def _array(value: JsonValue) -> list[JsonValue]:
    """A field _check_shapes let through as an array or null: [] for null."""
    return value if isinstance(value, list) else []


def _check_contents(doc: JsonObject) -> None:
    """The insides of the fields that the archive's writer and readers walk."""
    inside: list[tuple[str, JsonValue, tuple[type, ...]]] = [
        *[(f"{n}.{k}", v, _TEXT) for n in ("tags", "defines")
          for k, v in _object(doc.get(n)).items()],
        *[(f"{n}.{k}", v, (dict,)) for n in ("settings", "settings_layers")
          for k, v in _object(doc.get(n)).items()],
        *[(f"series.{k}", v, (dict,)) for k, v in _object(doc.get("series")).items()],
        *[(f"scripts[{i}]", v, (dict,)) for i, v in enumerate(_array(doc.get("scripts")))],
    ]  # fmt: skip
    for name, value, types in inside:
        if not _fits(value, types):
            raise _wrong(name, value, _WANTED[types[-1]])
    for kind, cols in _object(doc.get("series")).items():  # {kind: {column: [values]}}
        for col, values in _object(cols).items():
            if not isinstance(values, list):
                raise _wrong(f"series.{kind}.{col}", values, "an array")
    for name, value in _object(doc.get("latency")).items():
        if value is not None and not _fits(value, _NUMBER):
            raise _wrong(f"latency.{name}", value, "a number or null")


def write_spool(rec: RunRecord, archive_url: str, reason: str) -> Path:
    """Write the complete record next to the run's artifacts, atomically; returns its path.

    archive_url: the masked URL of the archive it belongs to."""
    if rec.id is None:
        raise PgrigError("only a begun run (with an id) can be spooled")
    path = run_artifacts_dir(rec.id, archive=archive_url) / RECORD_SPOOL
    doc = {
        "format": _SPOOL_FORMAT,
        "archive": archive_url,
        "reason": reason,
        "record": _encode_record(rec),
    }
    # a full disk: no half-written spool left behind
    with safe_write.replacing(path, suffix=".part") as tmp, open(tmp, "w") as f:
        json.dump(doc, f, default=str)
    paths.spooled_dir().mkdir(parents=True, exist_ok=True)
    (paths.spooled_dir() / _marker(rec.id, archive_url)).touch()
    return path


def _marker(run_id: int, archive_url: str) -> str:
    return f"{archive_key(archive_url)}.{run_id}"


def read_spool(path: Path) -> tuple[str, RunRecord]:
    """(the masked URL of its archive, the record) of a spool file."""
    try:
        if not path.is_file():  # a FIFO would block the command for ever, a device read on
            raise ValueError("not a regular file")
        doc = json.loads(path.read_text())
        if not isinstance(doc, dict):
            raise ValueError(f"a JSON {_json_kind(doc)}, not a spooled run (an object)")
        if doc.get("format") != _SPOOL_FORMAT:
            raise ValueError(f"unknown spool format {doc.get('format')!r}")
        if not isinstance(doc.get("record"), dict) or not isinstance(doc.get("archive"), str):
            raise ValueError("no record and archive in it")
        return doc["archive"], _decode_record(doc["record"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise SpoolUnreadable(f"cannot read spooled run {path}: {e}") from e


class SpoolUnreadable(PgrigError):
    """A spool file that is no spooled run (damaged, or not one at all)."""


def _json_kind(doc: object) -> str:
    if doc is None:
        return "null"
    return {list: "array", str: "string", bool: "boolean", dict: "object"}.get(type(doc), "number")


def quarantine(path: Path) -> Path:
    """Set a damaged spool file aside (renamed *.damaged): no command tries it again (its
    marker, now stale, goes at the next `pending_spools`), and nothing of it is lost."""
    aside = path.with_name(path.name + ".damaged")
    safe_write.set_aside(path, aside)
    return aside


def pending_spools(archive_url: str) -> list[Path]:
    """The records spooled for the archive `archive_url` in this home's artifacts, oldest run
    first (its stale markers removed), then those of older pgrig versions (any archive's: the
    record names its own)."""
    key = archive_key(archive_url)
    try:
        names = [m.name for m in paths.spooled_dir().iterdir()]
    except OSError:
        return []
    mine = sorted(int(n[len(key) + 1 :]) for n in names if _is_marker(n, key))
    found = []
    for run_id in mine:
        path = run_artifacts_dir(run_id, create=False, archive=archive_url) / RECORD_SPOOL
        if path.exists():
            found.append(path)
        else:  # imported (or removed by hand) since
            forget(run_id, archive=archive_url)
    for run_id in sorted(int(n) for n in names if n.isdigit()):
        path = legacy_run_dir(run_id) / RECORD_SPOOL
        if path.exists():
            found.append(path)
        else:
            (paths.spooled_dir() / str(run_id)).unlink(missing_ok=True)
    return found


def _is_marker(name: str, key: str) -> bool:
    return name.startswith(key + ".") and name[len(key) + 1 :].isdigit()


def forget(run_id: int, *, archive: str) -> None:
    """Remove a run's spooled record and its marker (after an import)."""
    (run_artifacts_dir(run_id, create=False, archive=archive) / RECORD_SPOOL).unlink(
        missing_ok=True
    )
    (paths.spooled_dir() / _marker(run_id, archive)).unlink(missing_ok=True)
    if not (legacy_run_dir(run_id) / RECORD_SPOOL).exists():  # an older version's marker
        (paths.spooled_dir() / str(run_id)).unlink(missing_ok=True)
