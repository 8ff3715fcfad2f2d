"""A run's figures checked against pgbench's own summary, before anything is recorded.

pgrig computes its figures from pgbench's per-transaction log (analysis/txlog.py). pgbench
writes that log without checking its writes: a full work directory loses lines silently while
pgbench's summary still counts every transaction. So the two are compared: pgbench logs one
line per transaction it counts as processed, failed or skipped (checked on pgbench 14-18), so
a completed run's log must hold that many lines, and the measured window can never hold more
transactions than the whole run. A disagreement is a failed run whose figures are not kept
(never a result of 0 TPS), its error says both counts and, when it can tell, why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pgrig.load.engines.pgbench_output import PgbenchSummary

__all__ = ["LOW_SPACE_BYTES", "Disagreement", "check", "space_note"]

LOW_SPACE_BYTES = 1 << 20  # a work directory with less free than this could not take the log


@dataclass(frozen=True)
class Disagreement:
    """Why the figures of a run cannot be trusted: `message` becomes the run's error."""

    message: str
    summary_transactions: int
    logged_lines: int | None


def check(
    summary: PgbenchSummary | None,
    *,
    logged_lines: int | None,
    window_transactions: int | None,
    clients: int,
    work_dir: Path | None = None,
    log_error: str | None = None,
) -> Disagreement | None:
    """None when the per-transaction log and pgbench's summary agree (or there is no complete
    summary to compare with: a killed pgbench prints none, and its run is not "ok" anyway).

    logged_lines: every line read from the log (lead-in included); window_transactions: what
    the run would record for its measured window. A difference of at most one transaction
    per client is tolerated (a transaction in flight at the deadline)."""
    if summary is None or not summary.complete or summary.processed is None:
        return None
    counted = summary.processed + (summary.failed or 0) + (summary.skipped or 0)
    logged = logged_lines or 0
    problem: str | None = None
    if log_error:
        problem = f"its per-transaction log could not be read ({log_error})"
    elif counted > 0 and abs(counted - logged) > max(clients, 1):
        problem = f"its per-transaction log holds {logged:,} lines"
    elif window_transactions is None and summary.processed > 0:
        problem = "pgrig measured no transaction from its per-transaction log"
    elif window_transactions is not None and window_transactions > counted + max(clients, 1):
        problem = f"pgrig counted {window_transactions:,} in the measured window alone"
    if problem is None:
        return None
    message = (
        f"pgbench's own summary counts {counted:,} transactions"
        + (f" ({summary.tps:,.1f} tps)" if summary.tps is not None else "")
        + f" but {problem}: the run's figures cannot be trusted and are not recorded"
    )
    note = space_note(work_dir)
    if note:
        message += f"; {note}"
    return Disagreement(message, counted, logged_lines)


def space_note(work_dir: Path | None) -> str | None:
    """Why the log may be short: its directory is (nearly) full."""
    if work_dir is None:
        return None
    try:
        st = os.statvfs(work_dir)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if free >= LOW_SPACE_BYTES:
        return None
    return (
        f"the work directory {work_dir} has {free // 1024} kB free (No space left on device?): "
        "give PGRIG_WORK_DIR a place with room"
    )
