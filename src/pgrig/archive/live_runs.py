"""Which running runs are alive: a running run's lease columns read from the archive, its owner
told dead or alive (the rules are archive/lease.py's), and a live run refused where changing it
would pull its row from under its owner (delete, mark)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Connection, RowMapping, select

from pgrig.archive import lease
from pgrig.archive.engine import Database
from pgrig.archive.models import runs as runs_t
from pgrig.archive.rows import LEASE_COLUMNS, record_time
from pgrig.errors import NotFound, PgrigError

# A run begun by a pgrig older than revision 0003 has no lease: it is lost once this old.
_LEGACY_STALE = timedelta(days=1)


def lease_rows(conn: Connection, where: list[ColumnElement[bool]]) -> list[RowMapping]:
    """The status, times, study and lease columns of the runs matching `where`."""
    q = select(
        runs_t.c.id,
        runs_t.c.status,
        runs_t.c.error,
        runs_t.c.started_at,
        runs_t.c.ended_at,
        runs_t.c.study_id,
        *(runs_t.c[c] for c in LEASE_COLUMNS),
    ).where(*where)
    return list(conn.execute(q).mappings())


def is_lost(row: RowMapping, now: datetime) -> bool:
    """Whether a running run's owner is gone (the rules are in archive/lease.py)."""
    if row["lease_pid"] is None:  # begun by a pgrig older than schema revision 0003
        started = record_time(row["started_at"])
        return started is None or now - started > _LEGACY_STALE
    gone = lease.is_gone(lease.Owner.from_columns(row))
    if gone is None:
        return lease.expired(record_time(row["heartbeat_at"]), now)
    return gone


def refuse_live(db: Database, conn: Connection, run_id: int, verb: str) -> RowMapping:
    """The run's lease row; a PgrigError naming its owner if the run is live."""
    rows = lease_rows(conn, [runs_t.c.id == run_id])
    if not rows:
        raise NotFound(f"run {run_id} is not in archive {db.url}")
    row = rows[0]
    if row["status"] == "running" and not is_lost(row, db.clock(conn)):
        raise PgrigError(
            f"cannot {verb} run {run_id}: it is running (pgrig pid {row['lease_pid']} on "
            f"{row['lease_host']}); stop that run first"
        )
    return row


def running_owner(db: Database, run_id: int) -> str | None:
    """ "pid N on HOST" when the run is live (running and its owner alive), else None."""
    with db.read() as conn:
        rows = lease_rows(conn, [runs_t.c.id == run_id])
        if not rows or rows[0]["status"] != "running":
            return None
        row = rows[0]
        if is_lost(row, db.clock(conn)):
            return None
        return f"pid {row['lease_pid']} on {row['lease_host']}"


def lost_reason(row: RowMapping) -> str:
    """The error a lost run is archived with."""
    if row["lease_pid"] is None:
        return "the run's pgrig process ended without finishing it (no lease: older pgrig)"
    return (
        f"lost: pgrig process {row['lease_pid']} on {row['lease_host']} ended without "
        "finishing the run (series up to its last heartbeat kept)"
    )
