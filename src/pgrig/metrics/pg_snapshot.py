"""One-off PostgreSQL facts for a run: settings, version, size, checkpoint, counter baselines.

Nothing here resets statistics (pg_stat_reset would disturb anyone else watching the server):
totals over a measured window are differences between two counters() readings, and a change
of stats_reset in between (or a crash, which discards statistics) voids them.
Use an autocommit connection; counters() clears the statistics snapshot first anyway, so two
readings in one transaction still differ.
"""

from __future__ import annotations

import time
from typing import Any, cast

import psycopg
from psycopg import sql

from pgrig.errors import PgrigError, first_line
from pgrig.record.documents import SettingDoc

SETTING_FIELDS = ("setting", "unit", "boot_val", "reset_val", "source", "context", "vartype")

# Cumulative pg_stat_database columns pgrig follows (all exist from PostgreSQL 9.2 on).
DB_COUNTERS = (
    "xact_commit",
    "xact_rollback",
    "blks_read",
    "blks_hit",
    "tup_returned",
    "tup_fetched",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "temp_files",
    "temp_bytes",
    "deadlocks",
)
# Server-wide cumulative counters, same names whatever the version.
SERVER_COUNTERS = ("checkpoints_timed", "checkpoints_req", "buffers_written", "wal_bytes")
TABLE_COUNTERS = ("autovacuum_count", "autoanalyze_count")

# The workload's backends in pg_stat_activity: clients and their parallel workers, never
# walsenders (a sync replica's walsender is 'active' in WalSenderMain all run long), autovacuum
# or other background processes, nor pgrig's own monitoring sessions (application_name
# pgrig-*). Every activity and wait figure counts these and only these.
WORKLOAD_BACKENDS_SQL = (
    "backend_type IN ('client backend', 'parallel worker') AND pid <> pg_backend_pid()"
    " AND coalesce(application_name, '') NOT LIKE 'pgrig-%'"
)


def checkpoint_sql(server_version_num: int) -> str:
    """A one-row subquery (checkpoints_timed, checkpoints_req, buffers_written).

    PostgreSQL 17 moved checkpoint figures from pg_stat_bgwriter to pg_stat_checkpointer.
    """
    if server_version_num >= 170000:
        return (
            "SELECT num_timed AS checkpoints_timed, num_requested AS checkpoints_req, "
            "buffers_written FROM pg_stat_checkpointer"
        )
    return (
        "SELECT checkpoints_timed, checkpoints_req, buffers_checkpoint AS buffers_written "
        "FROM pg_stat_bgwriter"
    )


WAL_STATS_MAJOR = 14  # pg_stat_wal, with wal_bytes


def wal_bytes_sql(server_version_num: int) -> str:
    """Bytes of WAL the server generated, cumulative; NULL on a standby, which writes no WAL
    of its own. pg_stat_wal's wal_bytes (14+): the WAL records alone. The LSN advance of
    older servers also counts the padding of every segment switch (archive_timeout, a
    backup's pg_switch_wal: up to 16 MiB of nothing), as provision/server/basebackup.py's
    wal_figures says too. wal_bytes restarts after a crash or pg_stat_reset_shared('wal'):
    the samplers take a counter that goes back as unknown."""
    if server_version_num >= WAL_STATS_MAJOR * 10000:
        return (
            "CASE WHEN pg_is_in_recovery() THEN NULL "
            "ELSE (SELECT wal_bytes FROM pg_stat_wal)::float8 END"
        )
    return (
        "CASE WHEN pg_is_in_recovery() THEN NULL "
        "ELSE pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 END"
    )


TABLE_COUNTERS_SQL = (
    "SELECT coalesce(sum(autovacuum_count), 0)::float8 AS autovacuum_count, "
    "coalesce(sum(autoanalyze_count), 0)::float8 AS autoanalyze_count FROM pg_stat_user_tables"
)


def server_version(conn: psycopg.Connection) -> tuple[str, int, int]:
    """(version() text, major version, server_version_num), e.g. (..., 15, 150014)."""
    row = conn.execute("SELECT version(), current_setting('server_version_num')::int").fetchone()
    assert row is not None
    num = int(row[1])
    return str(row[0]), major_of(num), num


def major_of(server_version_num: int) -> int:
    """150014 -> 15; 90624 -> 9 (pre-10 majors are x.y; pgrig only runs 10+ anyway)."""
    return server_version_num // 10000


def short_version(server_version_num: int) -> str:
    """150014 -> '15.14' (what RunRecord.server_version holds)."""
    n = server_version_num
    if n >= 100000:
        return f"{n // 10000}.{n % 10000}"
    return f"{n // 10000}.{n // 100 % 100}.{n % 100}"


def settings_snapshot(conn: psycopg.Connection) -> dict[str, SettingDoc]:
    """The full pg_settings view: name -> {setting, unit, boot_val, reset_val, source, ...}."""
    cols = sql.SQL(", ").join(sql.Identifier(c) for c in SETTING_FIELDS)
    query = sql.SQL("SELECT name, {} FROM pg_settings ORDER BY name").format(cols)
    out: dict[str, SettingDoc] = {}
    for row in conn.execute(query):
        # the columns of SettingDoc, in its order: pg_settings' text columns
        out[row[0]] = cast(SettingDoc, dict(zip(SETTING_FIELDS, row[1:], strict=True)))
    return out


def database_size(conn: psycopg.Connection, dbname: str) -> int | None:
    """pg_database_size in bytes, None when the database does not exist."""
    row = conn.execute(
        "SELECT pg_database_size(oid) FROM pg_database WHERE datname = %s", (dbname,)
    ).fetchone()
    return int(row[0]) if row else None


def checkpoint(conn: psycopg.Connection) -> None:
    """Force a checkpoint (before a measured run, so runs start with a clean WAL state)."""
    try:
        conn.execute("CHECKPOINT")
    except psycopg.errors.InsufficientPrivilege as e:
        raise PgrigError(
            "CHECKPOINT refused: the user needs superuser or the pg_checkpoint role "
            f"({first_line(e)})"
        ) from None


def counters(conn: psycopg.Connection, dbname: str) -> dict[str, Any]:
    """Cumulative counters now, for window totals with counters_delta().

    Keys: ts (epoch s), stats_reset (ISO text or None), DB_COUNTERS, SERVER_COUNTERS and
    TABLE_COUNTERS (these two None unless the connection is to `dbname`: per-table statistics
    are only visible from inside their database).
    """
    num = conn.info.server_version
    conn.execute("SELECT pg_stat_clear_snapshot()")
    db_cols = ", ".join(f"d.{c}::float8" for c in DB_COUNTERS)
    query = (
        f"SELECT d.stats_reset::text, {db_cols}, c.checkpoints_timed::float8, "
        f"c.checkpoints_req::float8, c.buffers_written::float8, {wal_bytes_sql(num)}, "
        "current_database() = d.datname "
        f"FROM pg_stat_database d, ({checkpoint_sql(num)}) c WHERE d.datname = %s"
    )
    ts = time.time()
    row = conn.execute(query, (dbname,)).fetchone()
    if row is None:
        raise PgrigError(f"database {dbname!r} does not exist on this server")
    out: dict[str, Any] = {"ts": ts, "stats_reset": row[0]}
    values = row[1:-1]
    for name, value in zip((*DB_COUNTERS, *SERVER_COUNTERS), values, strict=True):
        out[name] = value
    if row[-1]:
        t = conn.execute(TABLE_COUNTERS_SQL).fetchone()
        assert t is not None
        out.update(zip(TABLE_COUNTERS, t, strict=True))
    else:
        out.update(dict.fromkeys(TABLE_COUNTERS))
    return out


def hit_ratio(blks_hit: float | None, blks_read: float | None) -> float | None:
    """100 * hit / (hit + read), as seed 000 computes it; None when nothing was read."""
    if blks_hit is None or blks_read is None or blks_hit + blks_read <= 0:
        return None
    # Divide first: hit/(hit+read) <= 1 exactly, whereas (100*hit)/hit can round to 100.00...01.
    return 100.0 * (blks_hit / (blks_hit + blks_read))


def counters_delta(start: dict[str, Any], end: dict[str, Any]) -> dict[str, Any]:
    """Totals over a window between two counters() readings.

    Returns seconds, every counter's difference, hit_ratio, commits_per_s and commits_per_min
    (TPC-C's TPM counts commits per minute), and stats_reset_changed. When the database's
    statistics were reset in between (stats_reset changed or a counter went backwards, as
    after a crash), all DB_COUNTERS differences are None: a partial figure would look
    plausible and be wrong. Server and table counters reset on their own (pg_stat_reset_shared,
    a dropped table): each is None only when it went backwards.
    """
    seconds = float(end["ts"]) - float(start["ts"])
    out: dict[str, Any] = {"seconds": seconds}

    def diff(name: str) -> float | None:
        a, b = start.get(name), end.get(name)
        return None if a is None or b is None else b - a

    db = {name: diff(name) for name in DB_COUNTERS}
    went_back = any(v is not None and v < 0 for v in db.values())
    reset = went_back or start.get("stats_reset") != end.get("stats_reset")
    out["stats_reset_changed"] = reset
    for name, value in db.items():
        out[name] = None if reset else value
    for name in (*SERVER_COUNTERS, *TABLE_COUNTERS):
        value = diff(name)
        out[name] = None if value is None or value < 0 else value
    out["hit_ratio"] = hit_ratio(out["blks_hit"], out["blks_read"])
    commits = out["xact_commit"]
    ok = commits is not None and seconds > 0
    out["commits_per_s"] = commits / seconds if ok else None
    out["commits_per_min"] = commits * 60.0 / seconds if ok else None
    return out
