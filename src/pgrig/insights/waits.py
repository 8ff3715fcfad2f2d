"""The wait profile of a run: what active backends were doing, as shares of active time.

Three series can hold wait events, each a row per second with `wait.<type>:<event>` counts
of backend states seen (`wait.CPU`: active and not waiting):
- "waits": pg_stat_activity sampled `hz` times a second (metrics/wait_sampler.py), the rows
  summing a second's snapshots (`snapshots`, `active`). 10 Hz for short runs.
- "pg": the PostgreSQL sampler's one snapshot a second (metrics/pg_metrics.py), what runs
  without the finer sampler (and runs archived before it) have.
- "wait_sampling": pg_wait_sampling's profile grown over each second, where that extension is
  loaded (samples every 10 ms inside the server): a profile of its own, beside the first.
Summed over the seconds of the measured window, each event's count over all states seen is
its share. Each share carries 95% bounds and the count it rests on (analysis/proportion.py:
Wilson bounds with the effective sample size of per-second clusters, because states seen
together are not independent draws).
"""

from __future__ import annotations

from pgrig.analysis.proportion import effective_n, share_bounds
from pgrig.record.documents import (
    WaitEvent,
    WaitSamplingDoc,
    WaitSamplingFound,
    WaitsDoc,
    WaitShares,
)

Series = dict[str, list[float | None]]  # one kind of a run's series: {column: [values]}

WAIT_COLUMN = "wait."  # the samplers' column prefix (metrics.pg_metrics.WAIT_PREFIX)
TOP = 15
BOUNDS = "95% Wilson bounds, effective sample size from per-second clusters"


def profile(
    pg: Series | None,
    t0: float,
    t1: float,
    waits: Series | None = None,
    sampling: WaitSamplingDoc | None = None,
    wait_sampling: Series | None = None,
) -> WaitsDoc:
    """Shares of active time by wait event over rows with t0 < t <= t1: from the "waits"
    series when the run has one, else from the once-a-second "pg" series. `sampling` is
    what the runner chose (RunRecord.extra["wait_sampling"]); pg_wait_sampling's profile
    comes beside it (its own key) when the run has that series."""
    sampling = sampling or {}
    doc: WaitsDoc | None = None
    if waits and "t" in waits:
        hz = sampling.get("hz")
        source = f"pg_stat_activity, sampled {hz:g} times a second" if hz else "pg_stat_activity"
        doc = _shares(waits, t0, t1, source)
        if doc["seconds"] == 0 and pg and "t" in pg:  # the finer sampler never got through
            error = (sampling.get("sampler") or {}).get("error") or "no snapshot in the window"
            doc = None
            sampling = {**sampling, "why": f"the finer wait sampler failed ({error})"}
    if doc is None and pg and "t" in pg:
        doc = _shares(pg, t0, t1, "pg_stat_activity, sampled once a second")
    if doc is None:
        return WaitsDoc(collected=False, reason="not collected: the run has no PostgreSQL samples")
    if sampling.get("why"):
        doc["why"] = sampling["why"]
    ws = sampling.get("pg_wait_sampling")
    if wait_sampling and "t" in wait_sampling:
        found: WaitSamplingFound = ws or {}
        period = found.get("profile_period_ms")
        every = f" every {period} ms" if period else ""
        name = f"pg_wait_sampling {found.get('version', '')}".strip()
        sub = _shares(wait_sampling, t0, t1, f"{name}, each backend{every} inside the server")
        if not found.get("samples_cpu"):
            sub["of"] = "waiting time"
            sub["note"] = (
                "this pg_wait_sampling does not sample backends on CPU "
                "(no pg_wait_sampling.sample_cpu): shares of waiting time, not of active time"
            )
        doc["pg_wait_sampling"] = sub
    elif ws is not None:
        reason = ws.get("reason") or "the run has no pg_wait_sampling rows"
        doc["pg_wait_sampling"] = WaitShares(collected=False, reason=f"not collected: {reason}")
    return doc


def _shares(series: Series, t0: float, t1: float, source: str) -> WaitsDoc:
    ts = series["t"]
    up = series.get("up") or [1] * len(ts)
    picked = [i for i, t in enumerate(ts) if t is not None and t0 < t <= t1 and up[i]]
    columns = {
        name[len(WAIT_COLUMN) :]: [float(values[i] or 0) if i < len(values) else 0.0
                                   for i in picked]
        for name, values in series.items()
        if name.startswith(WAIT_COLUMN)
    }  # fmt: skip
    per_second = [sum(col[j] for col in columns.values()) for j in range(len(picked))]
    seen = sum(per_second)
    snapshots = series.get("snapshots")
    events: list[WaitEvent] = []
    for event, col in columns.items():
        n = sum(col)
        if n <= 0:
            continue
        n_eff = effective_n(col, per_second)
        share, low, high = share_bounds(n, seen, n_eff)
        events.append(
            WaitEvent(
                event=event,
                type=_wait_type(event),
                seen=int(n),
                share_pct=round(share, 2),
                low_pct=round(low, 2),
                high_pct=round(high, 2),
                effective_n=round(n_eff, 1),
            )
        )
    events.sort(key=lambda e: (-e["seen"], e["event"]))
    by_type: dict[str, float] = {}
    for e in events:
        by_type[e["type"]] = by_type.get(e["type"], 0.0) + e["seen"]
    return WaitsDoc(
        collected=True,
        source=source,
        of="active time",
        seconds=len(picked),
        samples=int(sum(float(snapshots[i] or 0) for i in picked)) if snapshots else len(picked),
        active_seen=int(seen),
        bounds=BOUNDS,
        events=events[:TOP],
        by_type={k: round(100.0 * v / seen, 2) for k, v in by_type.items()} if seen else {},
    )


def _wait_type(event: str) -> str:
    """ "LWLock:WALWrite" -> "LWLock"; "CPU" (active, no wait event) stays itself."""
    return "CPU" if event == "CPU" else event.split(":", 1)[0]
