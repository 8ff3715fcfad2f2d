"""Warm PostgreSQL's buffer cache before a measured run, so repeats start from the same state.

A run whose per-run settings need a restart (shared_buffers, wal_buffers, ...) starts with an
empty buffer cache, and so does the run after it (putting the settings back restarts again):
in tune's confirmation phase a configuration's repeats then differ by where the cache and the
checkpoint cycle stood, not by the configuration (issue 26: one side's repeats ranged
1,753-2,297 TPS). pg_prewarm (contrib) reads every table and index of the run's database into
shared buffers before the CHECKPOINT that precedes every run. Tables are read largest first,
then indexes, so when the database exceeds shared_buffers what stays cached is what the
benchmark touches on every transaction (small tables and indexes), whatever the previous run
left there.

Without pg_prewarm (a server-only build, an external server without contrib) nothing is read
and the run says why: no silent half-measure.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from pgrig.errors import first_line
from pgrig.record.documents import PrewarmDoc

# Largest tables first, then indexes largest first: the last read (small and hot) stay cached.
_RELATIONS = """
SELECT c.oid::regclass::text, c.relkind
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'i', 'm') AND c.relpersistence <> 't'
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_toast'
ORDER BY c.relkind = 'i', pg_relation_size(c.oid) DESC
"""


def prewarm(conn: psycopg.Connection[Any]) -> PrewarmDoc:
    """Read the connected database's tables and indexes into shared buffers.

    Returns what was done: {"relations", "blocks", "seconds"}, or {"skipped": why}.
    `conn` is an autocommit connection to the run's database.
    """
    available = conn.execute(
        "SELECT installed_version IS NOT NULL, true FROM pg_available_extensions "
        "WHERE name = 'pg_prewarm'"
    ).fetchone()
    if available is None:
        return {"skipped": "pg_prewarm is not available on this server (no contrib)"}
    if not available[0]:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        except psycopg.Error as e:
            return {"skipped": f"pg_prewarm could not be created: {first_line(e)}"}
    started = time.monotonic()
    relations = conn.execute(_RELATIONS).fetchall()
    blocks = 0
    for name, _kind in relations:
        row = conn.execute("SELECT pg_prewarm(%s::regclass, 'buffer')", (name,)).fetchone()
        blocks += int(row[0]) if row and row[0] is not None else 0
    return {
        "relations": len(relations),
        "blocks": blocks,
        "seconds": round(time.monotonic() - started, 3),
    }
