"""The wait profile of a run: what active backends were doing, as shares of active time.

The PostgreSQL sampler (metrics/pg_metrics.py) already looks at pg_stat_activity every second
and stores, per sample, how many active backends it saw in each wait event as series "pg"
columns `wait.<type>:<event>` (`wait.CPU`: active and not waiting). Summed over the samples of
the measured window, each column's share of the total is the share of active time spent
there (each sample is one snapshot of every active backend). A one-second sampler sees a few
hundred to a few thousand backend states per minute: shares are estimates, printed as such.
"""

from __future__ import annotations

from typing import Any

WAIT_COLUMN = "wait."  # the sampler's column prefix (metrics.pg_metrics.WAIT_PREFIX)
TOP = 15


def profile(pg: dict[str, list[Any]] | None, t0: float, t1: float) -> dict[str, Any]:
    """Shares of active time by wait event over samples with t0 < t <= t1."""
    if not pg or "t" not in pg:
        return {"collected": False, "reason": "not collected: the run has no PostgreSQL samples"}
    ts, up = pg["t"], pg.get("up") or [1] * len(pg["t"])
    picked = [i for i, t in enumerate(ts) if t is not None and t0 < t <= t1 and up[i]]
    totals: dict[str, float] = {}
    for name, values in pg.items():
        if name.startswith(WAIT_COLUMN):
            n = sum(float(values[i] or 0) for i in picked if i < len(values))
            if n > 0:
                totals[name[len(WAIT_COLUMN) :]] = n
    seen = sum(totals.values())
    events = [
        {
            "event": event,
            "type": _wait_type(event),
            "seen": int(n),
            "share_pct": round(100.0 * n / seen, 2),
        }
        for event, n in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    by_type: dict[str, float] = {}
    for event, n in totals.items():
        by_type[_wait_type(event)] = by_type.get(_wait_type(event), 0.0) + n
    return {
        "collected": True,
        "source": "pg_stat_activity, sampled once a second",
        "samples": len(picked),
        "active_seen": int(seen),
        "events": events[:TOP],
        "by_type": {k: round(100.0 * v / seen, 2) for k, v in by_type.items()} if seen else {},
    }


def _wait_type(event: str) -> str:
    """ "LWLock:WALWrite" -> "LWLock"; "CPU" (active, no wait event) stays itself."""
    return "CPU" if event == "CPU" else event.split(":", 1)[0]
