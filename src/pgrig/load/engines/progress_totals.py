"""Totals of a pgbench process that printed no summary, from its -P progress lines.

A run with `--txlog sampled|off` takes its counts from pgbench's final summary
(load/engines/pgbench_sampled.py). An interrupted pgbench (Ctrl-C, SIGTERM, stopped early) prints
none, and in `off` mode there is no log to count either. Its -P 1 lines remain: each gives the
transactions per second and the mean and stddev latency over the last interval, pgbench's own
figures. So, over the lines printed:

- transactions: the sum of each line's rate times its interval (pgbench's rate is its count
  over that interval; the printed rate has one decimal, so each line is within 0.05 x its
  interval of the true count, and the sum is rounded);
- the window: from pgbench's start to its last line (what happened after the last line, up
  to the interruption, is not in any line and is left out);
- TPS: transactions over that window; mean latency: the mean of the lines' means weighted by
  their transactions; stddev: the pooled one (within and between lines);
- failed, skipped, retried: sums of the lines' counts (pgbench 15+ prints them).
The record says these come from progress lines (extra["figures_from"], and a warning every
surface shows): they are measured, but not pgbench's summary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pgrig.record.documents import FiguresFromDoc

SOURCE = "pgbench -P progress lines"


@dataclass(frozen=True)
class ProgressTotals:
    transactions: int
    window_s: float
    tps: float | None
    latency_avg_ms: float | None
    latency_stddev_ms: float | None
    failed: int | None
    skipped: int | None
    retried: int | None
    lines: int

    def as_dict(self) -> FiguresFromDoc:
        return {
            "source": SOURCE,
            "transactions": self.transactions,
            "window_s": self.window_s,
            "tps": self.tps,
            "latency_avg_ms": self.latency_avg_ms,
            "latency_stddev_ms": self.latency_stddev_ms,
            "failed": self.failed,
            "skipped": self.skipped,
            "retried": self.retried,
            "lines": self.lines,
        }


def totals(points: Sequence[Any]) -> ProgressTotals | None:
    """The totals of ProgressPoints (engines/pgbench_output.py) in order; None without lines."""
    pts = [p for p in points if p.tps is not None and p.elapsed_s is not None]
    if not pts:
        return None
    counts: list[float] = []
    prev = 0.0
    for p in pts:
        dt = max(float(p.elapsed_s) - prev, 0.0)
        counts.append(float(p.tps) * dt)
        prev = float(p.elapsed_s)
    n = sum(counts)
    window = float(pts[-1].elapsed_s)
    with_lat = [(c, p) for c, p in zip(counts, pts, strict=True) if p.latency_ms is not None]
    weight = sum(c for c, _ in with_lat)
    mean = sum(c * float(p.latency_ms) for c, p in with_lat) / weight if weight > 0 else None
    stddev = None
    if mean is not None and all(p.stddev_ms is not None for _, p in with_lat):
        var = sum(
            c * (float(p.stddev_ms) ** 2 + (float(p.latency_ms) - mean) ** 2) for c, p in with_lat
        )
        stddev = math.sqrt(var / weight)
    transactions = round(n)
    return ProgressTotals(
        transactions=transactions,
        window_s=window,
        tps=round(transactions / window, 6) if window > 0 else None,
        latency_avg_ms=None if mean is None else round(mean, 3),
        latency_stddev_ms=None if stddev is None else round(stddev, 3),
        failed=_sum(pts, "failed"),
        skipped=_sum(pts, "skipped"),
        retried=_sum(pts, "retried"),
        lines=len(pts),
    )


def _sum(points: Sequence[Any], name: str) -> int | None:
    values = [getattr(p, name) for p in points]
    return None if all(v is None for v in values) else sum(int(v or 0) for v in values)
