"""TPC-H's figures (clause 5.4) from the events of a run (workloads/tpch/stream.py).

- Power@Size = 3600 x SF / (prod of the 22 query times and the 2 refresh times) ^ (1/24),
  times in seconds; a query time under 1/1000 of the longest query's is raised to it.
- Throughput@Size = S x 22 x 3600 / Ts x SF, Ts the throughput test's interval in seconds.
- QphH@Size = sqrt(Power@Size x Throughput@Size).
None where the run does not give them (a query timed out or failed: its time is not known).
The geometric mean of the query times is given beside them (HammerDB's recommended figure
for kits that load in bulk and skip the audit, as pgrig does).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def raised(times: Sequence[float]) -> list[float]:
    """Query times under 1/1000 of the longest raised to it (clause 5.4.1.4)."""
    floor = max(times) / 1000 if times else 0.0
    return [max(t, floor) for t in times]


def power_at_size(sf: float, query_s: Sequence[float], refresh_s: Sequence[float]) -> float:
    if len(query_s) != 22 or len(refresh_s) != 2:
        raise ValueError("Power@Size needs the 22 query times and the 2 refresh times")
    times = [*raised(query_s), *refresh_s]
    if any(t <= 0 for t in times):
        raise ValueError("Power@Size needs positive times")
    log_mean = sum(math.log(t) for t in times) / len(times)
    return 3600 * sf / math.exp(log_mean)


def throughput_at_size(sf: float, streams: int, interval_s: float) -> float:
    return streams * 22 * 3600 / interval_s * sf


def qphh_at_size(power: float, throughput: float) -> float:
    return math.sqrt(power * throughput)


def geomean(values: Iterable[float]) -> float | None:
    vs = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in vs) / len(vs)) if vs else None


def summarize(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run's TPC-H document (record extra["tpch"]) from the stream's events."""
    start = next((e for e in events if e.get("event") == "start"), {})
    end = next((e for e in events if e.get("event") == "end"), None)
    mode = str(start.get("mode") or "power")
    sf = float(start.get("scale_factor") or 0)
    done = [dict(e) for e in events if e.get("event") == "query"]
    refreshes = [dict(e) for e in events if e.get("event") == "refresh"]
    streams = int(start.get("streams") or 0)
    expected = 22 * max(1, streams)
    ok = [e for e in done if e.get("status") == "ok"]
    out: dict[str, Any] = {
        "mode": mode,
        "scale_factor": sf,
        "seed": start.get("seed"),
        "qualification": start.get("qualification"),
        "streams": streams,
        "order": start.get("order"),
        "queries": done,
        "refresh": refreshes,
        "timed_out": [f"Q{e['query']}" for e in done if e.get("status") == "timeout"],
        "failed": [f"Q{e['query']}" for e in done if e.get("status") == "error"],
        "interval_s": end.get("seconds") if end else None,
        "geomean_s": geomean(float(e["seconds"]) for e in ok),
        "power_at_size": None,
        "throughput_at_size": None,
        "qphh_at_size": None,
        # every query, and every refresh function of the refresh stream (RF1 and RF2, once a
        # power run, once per query stream a throughput run): a refresh session that never
        # connected leaves no events, and all([]) would call the run complete
        "complete": len(ok) == expected
        and len(refreshes) == 2 * max(1, streams)
        and all(r.get("status") == "ok" for r in refreshes),
    }
    temps = [e.get("temp_bytes") for e in done if e.get("temp_bytes") is not None]
    out["temp_bytes"] = sum(temps) if temps else None
    if not out["complete"]:
        return out
    if mode == "power":
        by_query = {int(e["query"]): float(e["seconds"]) for e in ok}
        out["power_at_size"] = power_at_size(
            sf, [by_query[q] for q in sorted(by_query)], [float(r["seconds"]) for r in refreshes]
        )
    elif mode == "throughput" and out["interval_s"]:
        out["throughput_at_size"] = throughput_at_size(sf, streams, float(out["interval_s"]))
    return out
