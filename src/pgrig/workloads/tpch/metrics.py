"""TPC-H's figures (clause 5.4) from the events of a run (workloads/tpch/stream.py).

- Power@Size = 3600 x SF / (prod of the 22 query times and the 2 refresh times) ^ (1/24),
  times in seconds; a query time under 1/1000 of the longest query's is raised to it.
- Throughput@Size = S x 22 x 3600 / Ts x SF, Ts the throughput test's interval in seconds.
- QphH@Size = sqrt(Power@Size x Throughput@Size): a performance test's (clause 5.3.2: the
  power test, then the throughput test, in one run), each part from its own test's times.
None where the run does not give them (a query timed out or failed: its time is not known).
The geometric mean of the query times is given beside them (HammerDB's recommended figure
for kits that load in bulk and skip the audit, as pgrig does).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from pgrig.record.documents import StreamEvent, TpchDoc, TpchTestDoc


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


def summarize(events: Sequence[StreamEvent]) -> TpchDoc:
    """The run's TPC-H document (record extra["tpch"]) from the stream's events."""
    if any("test" in e for e in events):  # a performance test: its two tests' events, tagged
        return _performance(events)
    return _one_test(events)


def _one_test(events: Sequence[StreamEvent]) -> TpchDoc:
    """A power test's or a throughput test's document."""
    start = next((e for e in events if e.get("event") == "start"), StreamEvent())
    end = next((e for e in events if e.get("event") == "end"), None)
    mode = str(start.get("mode") or "power")
    sf = float(start.get("scale_factor") or 0)
    done = [e.copy() for e in events if e.get("event") == "query"]
    refreshes = [e.copy() for e in events if e.get("event") == "refresh"]
    streams = int(start.get("streams") or 0)
    expected = 22 * max(1, streams)
    ok = [e for e in done if e.get("status") == "ok"]
    out: TpchDoc = {
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
    temps = [t for e in done if (t := e.get("temp_bytes")) is not None]
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


def _performance(events: Sequence[StreamEvent]) -> TpchDoc:
    """A performance test's document: the power test's and the throughput test's summaries
    (their figures, intervals and completeness under "power" and "throughput"), every query and
    refresh function of both (each with its "test"), QphH@Size from the two figures. The query
    geometric mean and temp bytes are the power test's (one stream: each query's own time)."""
    power = _one_test([e for e in events if e.get("test") == "power"])
    tput = _one_test([e for e in events if e.get("test") == "throughput"])
    parts = [d for d in (power, tput) if d["queries"] or d["refresh"]]
    intervals = [i for d in (power, tput) if (i := d.get("interval_s")) is not None]
    p, t = power["power_at_size"], tput["throughput_at_size"]
    return {
        "mode": "performance",
        "scale_factor": power["scale_factor"] or tput["scale_factor"],
        "seed": power["seed"],
        "qualification": power["qualification"],
        "streams": tput["streams"],
        "order": _orders(power, tput),
        "queries": [q for d in parts for q in d["queries"]],
        "refresh": [r for d in parts for r in d["refresh"]],
        "timed_out": [q for d in parts for q in d["timed_out"]],
        "failed": [q for d in parts for q in d["failed"]],
        "interval_s": sum(intervals) if len(intervals) == 2 else None,
        "geomean_s": power["geomean_s"],
        "power_at_size": p,
        "throughput_at_size": t,
        "qphh_at_size": qphh_at_size(p, t) if p is not None and t is not None else None,
        "complete": power["complete"] and tput["complete"],
        "temp_bytes": power["temp_bytes"],
        "power": _part(power),
        "throughput": _part(tput),
    }


def _orders(power: TpchDoc, tput: TpchDoc) -> list[int] | dict[str, list[int]] | None:
    """A performance test's query orders: the power test's as stream "0", then the throughput
    test's streams'."""
    first, rest = power.get("order"), tput.get("order")
    if not first:
        return rest
    out: dict[str, list[int]] = {"0": first} if isinstance(first, list) else dict(first)
    return out | (rest if isinstance(rest, dict) else {})


def _part(test: TpchDoc) -> TpchTestDoc:
    """A performance test's part as the run's document keeps it beside the whole's figures."""
    return {
        "interval_s": test["interval_s"],
        "complete": test["complete"],
        "streams": test["streams"],
        "geomean_s": test["geomean_s"],
    }
