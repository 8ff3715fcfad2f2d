"""pg_stat_statements over a run's measured window: two snapshots and their difference.

The snapshots call pg_stat_statements(false) (no query texts: the texts file is read once, at
the end, for the top statements only) and keep the counters of the run's database. Columns
are picked from what the installed extension version has, so the same code reads 1.9 (14)
through 1.12 (18): total_exec_time, wal_* (13+), blk_read_time renamed shared_blk_read_time in
17, wal_buffers_full in 18, jit_* (1.10+). Entries are keyed by (userid, toplevel, queryid);
one missing at the start is new (its counters count whole), one whose calls went down was
reset (skipped). Entries evicted meanwhile (more distinct statements than
pg_stat_statements.max) show in pg_stat_statements_info.dealloc, reported as a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from psycopg import sql

from pgrig.insights.plans import clip
from pgrig.record.documents import StatementDoc, StatementsDoc

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow

    Conn = Connection[TupleRow]

TOP = 25
# output name -> candidate columns, newest spelling first
METRICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("calls", ("calls",)),
    ("total_ms", ("total_exec_time", "total_time")),
    ("plan_ms", ("total_plan_time",)),
    ("rows", ("rows",)),
    ("shared_blks_hit", ("shared_blks_hit",)),
    ("shared_blks_read", ("shared_blks_read",)),
    ("shared_blks_dirtied", ("shared_blks_dirtied",)),
    ("shared_blks_written", ("shared_blks_written",)),
    ("temp_blks_read", ("temp_blks_read",)),
    ("temp_blks_written", ("temp_blks_written",)),
    ("blk_read_ms", ("shared_blk_read_time", "blk_read_time")),
    ("blk_write_ms", ("shared_blk_write_time", "blk_write_time")),
    ("wal_records", ("wal_records",)),
    ("wal_fpi", ("wal_fpi",)),
    ("wal_bytes", ("wal_bytes",)),
    ("wal_buffers_full", ("wal_buffers_full",)),
    # JIT (1.10+): functions compiled and the time of each compilation phase
    ("jit_functions", ("jit_functions",)),
    ("jit_generation_ms", ("jit_generation_time",)),
    ("jit_inlining_ms", ("jit_inlining_time",)),
    ("jit_optimization_ms", ("jit_optimization_time",)),
    ("jit_emission_ms", ("jit_emission_time",)),
)
JIT_MS = ("jit_generation_ms", "jit_inlining_ms", "jit_optimization_ms", "jit_emission_ms")
Key = tuple[int, bool, int]
_THIS_DB = " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"


@dataclass
class Extension:
    schema: str
    version: str
    columns: dict[str, str]  # output name -> column of this version
    has_toplevel: bool
    has_info: bool  # pg_stat_statements_info (1.9+)


@dataclass
class Snapshot:
    rows: dict[Key, tuple[float, ...]] = field(default_factory=dict)
    dealloc: int | None = None


def find_extension(conn: Conn) -> Extension | None:
    """The pg_stat_statements extension of the connected database, or None."""
    row = conn.execute(
        "SELECT n.nspname, e.extversion FROM pg_extension e "
        "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_stat_statements'"
    ).fetchone()
    if row is None:
        return None
    schema, version = row
    have = {
        r[0]
        for r in conn.execute(
            "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = 'pg_stat_statements' AND a.attnum > 0 "
            "AND NOT a.attisdropped",
            (schema,),
        ).fetchall()
    }
    columns = {}
    for name, candidates in METRICS:
        for col in candidates:
            if col in have:
                columns[name] = col
                break
    info = conn.execute(
        "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = 'pg_stat_statements_info'",
        (schema,),
    ).fetchone()
    return Extension(schema, version, columns, "toplevel" in have, info is not None)


def snapshot_query(ext: Extension) -> sql.Composed:
    metrics = sql.SQL(", ").join(
        sql.SQL("{}::float8").format(sql.Identifier(col)) for col in ext.columns.values()
    )
    toplevel = sql.SQL("toplevel") if ext.has_toplevel else sql.SQL("true")
    return sql.SQL(
        "SELECT userid::int8, {toplevel}, queryid, {metrics}"
        " FROM {schema}.pg_stat_statements(false)" + _THIS_DB + " AND queryid IS NOT NULL"
    ).format(toplevel=toplevel, metrics=metrics, schema=sql.Identifier(ext.schema))


def take(conn: Conn, ext: Extension) -> Snapshot:
    snap = Snapshot()
    for userid, toplevel, queryid, *values in conn.execute(snapshot_query(ext)).fetchall():
        snap.rows[(int(userid), bool(toplevel), int(queryid))] = tuple(
            float(v or 0) for v in values
        )
    if ext.has_info:
        q = sql.SQL("SELECT dealloc FROM {}.pg_stat_statements_info").format(
            sql.Identifier(ext.schema)
        )
        row = conn.execute(q).fetchone()
        snap.dealloc = int(row[0]) if row else None
    return snap


def total_calls(conn: Conn, ext: Extension) -> float:
    """Calls of every statement of the database so far (top-level and nested)."""
    q = sql.SQL(
        "SELECT coalesce(sum(calls), 0)::float8 FROM {}.pg_stat_statements(false)" + _THIS_DB
    ).format(sql.Identifier(ext.schema))
    row = conn.execute(q).fetchone()
    assert row is not None  # an aggregate without GROUP BY: one row
    return float(row[0])


Counters = dict[str, float]  # a statement's counters by output name (METRICS)


def deltas(ext: Extension, start: Snapshot, end: Snapshot) -> tuple[dict[Key, Counters], int]:
    """Counters that changed between the snapshots, by key; and how many were reset."""
    names = list(ext.columns)
    out: dict[Key, dict[str, float]] = {}
    resets = 0
    for key, after in end.rows.items():
        before = start.rows.get(key)
        diff = after if before is None else tuple(b - a for a, b in zip(before, after, strict=True))
        d = dict(zip(names, diff, strict=True))
        if d["calls"] < 0:
            resets += 1
            continue
        if d["calls"] > 0:
            out[key] = d
    return out, resets


def fetch_texts(conn: Conn, ext: Extension, queryids: list[int]) -> dict[int, str]:
    if not queryids:
        return {}
    q = sql.SQL(
        "SELECT DISTINCT ON (queryid) queryid, query FROM {}.pg_stat_statements(true)"
        + _THIS_DB
        + " AND queryid = ANY(%s)"
    ).format(sql.Identifier(ext.schema))
    return {int(qid): str(text or "") for qid, text in conn.execute(q, (queryids,)).fetchall()}


def top_keys(changed: dict[Key, Counters], top: int = TOP) -> list[Key]:
    return sorted(changed, key=lambda k: (-changed[k]["total_ms"], k))[:top]


def summarize(
    ext: Extension,
    changed: dict[Key, Counters],
    texts: dict[int, str],
    window_s: float | None,
    top: int = TOP,
) -> StatementsDoc:
    """The `statements` document: totals over the window and the top statements by time."""
    top_level = [d for k, d in changed.items() if k[1]]
    calls = sum(d["calls"] for d in top_level)
    total_ms = sum(d["total_ms"] for d in top_level)
    rows = []
    for key in top_keys(changed, top):
        d = changed[key]
        entry = StatementDoc(
            queryid=str(key[2]),
            toplevel=key[1],
            text=clip(" ".join(texts.get(key[2], "").split())),
            calls=int(d["calls"]),
            total_ms=round(d["total_ms"], 3),
            mean_ms=round(d["total_ms"] / d["calls"], 6),
            share_pct=round(100.0 * d["total_ms"] / total_ms, 2) if total_ms > 0 else None,
        )
        # the server's other counters, each a key of StatementDoc (METRICS' output names)
        others = {
            name: round(d[name], 3) if name.endswith("_ms") else int(d[name])
            for name in ext.columns
            if name not in ("calls", "total_ms")
        }
        entry.update(cast(StatementDoc, others))
        hit, read = d.get("shared_blks_hit", 0.0), d.get("shared_blks_read", 0.0)
        entry["hit_ratio"] = round(100.0 * hit / (hit + read), 2) if hit + read > 0 else None
        rows.append(entry)
    return StatementsDoc(
        collected=True,
        source=f"pg_stat_statements {ext.version}",
        window_s=window_s,
        statements=len(changed),
        calls=int(calls),
        total_ms=round(total_ms, 3),
        calls_per_s=round(calls / window_s, 2) if window_s else None,
        top=rows,
    )
