"""CH-benCHmark's analytic figures (record extra["chbench"]) from the analytic streams' events
(workloads/chbench/stream.py) and the run's measured window (the TPC-C transactions' own,
load/engines/results.py: the same boundaries for both sides).

Counting, as pgrig counts transactions: a query counts when it COMPLETES inside the window
[start, end), whenever it started (one begun in the warm-up and ending inside counts, as a
transaction does). A query still running at the window's end is cancelled and recorded as
"cut": it is not counted, neither as a completed query nor pro rata. Timed-out queries
(--query-timeout) and failed ones are recorded with their status and never counted.

- qph: analytic queries completed per hour of the measured window (QphH-style, over all
  streams): completed x 3600 / measured seconds.
- per query (Q1..Q22): completed count, median and max seconds of the completed ones, with
  the timeouts, errors and cuts beside them.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import cast

from pgrig.record.stream_docs import ChbenchDoc, ChbenchQuery, ChbenchQueryRow, StreamEvent

COUNTING = (
    "a query counts when it completes inside the measured window, whenever it started; one "
    "running at the window's end is cancelled and recorded as cut, not counted; timed-out and "
    "failed queries are recorded, never counted"
)


def in_window(event: StreamEvent, start_s: float, end_s: float) -> bool:
    """Whether a query event ended inside [start_s, end_s) (epoch seconds)."""
    ended = event.get("ended_at")
    return isinstance(ended, int | float) and start_s <= float(ended) < end_s


def summarize(
    events: Sequence[StreamEvent],
    analytic_clients: int,
    window: tuple[float, float] | None,
    query_timeout_s: float | None,
) -> ChbenchDoc:
    """The run's CH-benCHmark document. window: the measured window [start, end) in epoch
    seconds (None: nothing measured, no rate)."""
    none: StreamEvent = {}
    start = next((e for e in events if e.get("event") == "start"), none)
    ready = next((e for e in events if e.get("event") == "ready"), none)
    began = start.get("at")
    rows: list[ChbenchQueryRow] = []
    for e in events:
        if e.get("event") != "query":
            continue
        row = cast(ChbenchQueryRow, {k: v for k, v in e.items() if k != "event"})
        row["in_window"] = window is not None and in_window(e, *window)
        if window is not None and isinstance(e.get("ended_at"), int | float):
            row["ended_s"] = round(float(e["ended_at"]) - window[0], 6)  # from the window's start
        rows.append(row)
    inside = [r for r in rows if r["in_window"]]
    done = [r for r in inside if r.get("status") == "ok"]
    measured_s = (window[1] - window[0]) if window is not None else None
    doc: ChbenchDoc = {
        "analytic_clients": analytic_clients,
        "query_timeout_s": query_timeout_s,
        "order": start.get("order"),
        # the sessions connected (before the launch), the streams' start (at the launch) and
        # that start from the window's (negative: in the lead-in, as it should be)
        "ready_at": ready.get("at"),
        "started_at": began,
        "started_s": (
            round(float(began) - window[0], 3)
            if window is not None and isinstance(began, int | float)
            else None
        ),
        "counting": COUNTING,
        "window_s": round(measured_s, 6) if measured_s is not None else None,
        "completed": len(done) if analytic_clients else None,
        "qph": (
            round(len(done) * 3600 / measured_s, 1)
            if analytic_clients and measured_s and measured_s > 0
            else None
        ),
        "cut": sum(1 for r in rows if r.get("status") == "cut"),
        "timed_out": sum(1 for r in inside if r.get("status") == "timeout"),
        "errors": sum(1 for r in rows if r.get("status") == "error"),
        # ended before the window opened (the warm-up): recorded, not counted
        "before_window": sum(
            1 for r in rows if window is not None and float(r.get("ended_at") or 0) < window[0]
        ),
        # the cut ones ran to the window's end: they belong with it
        "per_query": per_query([r for r in rows if r["in_window"] or r.get("status") == "cut"]),
        "queries": rows,
        "stream_errors": [
            {"stream": e.get("stream"), "error": e.get("error")}
            for e in events
            if e.get("event") == "error"
        ],
    }
    return doc


def per_query(rows: Sequence[StreamEvent]) -> dict[str, ChbenchQuery]:
    """Q1..Q22 over the window: completed count, median and max seconds, and the rest."""
    out: dict[str, ChbenchQuery] = {}
    for q in sorted({int(r["query"]) for r in rows}):
        of_q = [r for r in rows if int(r["query"]) == q]
        secs = [float(r["seconds"]) for r in of_q if r.get("status") == "ok"]
        out[f"Q{q}"] = {
            "completed": len(secs),
            "median_s": round(statistics.median(secs), 6) if secs else None,
            "max_s": round(max(secs), 6) if secs else None,
            "timed_out": sum(1 for r in of_q if r.get("status") == "timeout"),
            "errors": sum(1 for r in of_q if r.get("status") == "error"),
            "cut": sum(1 for r in of_q if r.get("status") == "cut"),
        }
    return out
