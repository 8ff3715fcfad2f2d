"""Reading what sysbench 1.0 prints: per-second reports, the checkpoint report, the final
statistics and the latency histogram (`--histogram`).

pgrig runs sysbench with `--report-checkpoints=LEAD_IN`: at that instant sysbench prints a
"Checkpoint report" of the lead-in and resets every counter and the histogram, so the final
statistics and histogram cover the measured window only (from the checkpoint to the end of the
run, including the last events' drain).

The histogram (sb_histogram.c): 1,024 buckets on a log scale from 0.001 ms to 100,000 ms; a
latency v goes to bucket i = round((ln v - ln 0.001) * m), m = 1023 / ln(1e8), and the bucket is
printed as exp(i / m) * 0.001 ms, the geometric centre of the latencies it holds. Adjacent
buckets are 1.82% apart, so any latency is within 0.90% (BUCKET_HALF_WIDTH) of its bucket's
printed value (which sysbench rounds to 0.001 ms). sysbench's own "95th percentile" is the
first bucket at which the cumulative count reaches round(n * 0.95); `percentile` does the same
for any fraction, so the p95 computed here equals the one sysbench prints (a check).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

HIST_BUCKETS = 1024
HIST_MIN_MS = 0.001
HIST_MAX_MS = 100_000.0
HIST_MULT = (HIST_BUCKETS - 1) / math.log(HIST_MAX_MS / HIST_MIN_MS)
BUCKET_HALF_WIDTH = math.exp(0.5 / HIST_MULT) - 1.0  # 0.0090: relative error of a bucket value

_INTERVAL_RE = re.compile(r"^\[\s*(\d+(?:\.\d+)?)s\s*\]\s+thds:\s*(\d+)\s+tps:\s*([\d.]+)")
_QPS_RE = re.compile(r"qps:\s*([\d.]+)")
_LAT_RE = re.compile(r"lat \(ms,(\d+(?:\.\d+)?)%\):\s*([\d.]+)")
_ERR_RE = re.compile(r"err/s:\s*([\d.]+)")
_HIST_ROW_RE = re.compile(r"^\s*([\d.]+)\s+\|\**\s+(\d+)\s*$")
_COUNT_RATE_RE = r":\s+(\d+)\s+\(([\d.]+) per sec\.\)"
_SUMMARY_RES = {
    "transactions": re.compile(r"^\s*transactions" + _COUNT_RATE_RE, re.M),
    "queries": re.compile(r"^\s*queries" + _COUNT_RATE_RE, re.M),
    "ignored_errors": re.compile(r"^\s*ignored errors" + _COUNT_RATE_RE, re.M),
    "reconnects": re.compile(r"^\s*reconnects" + _COUNT_RATE_RE, re.M),
}
_FIGURE_RES = {
    "total_time_s": re.compile(r"^\s*total time:\s+([\d.]+)s", re.M),
    "events": re.compile(r"^\s*total number of events:\s+(\d+)", re.M),
    "lat_min_ms": re.compile(r"^\s*min:\s+([\d.]+)", re.M),
    "lat_avg_ms": re.compile(r"^\s*avg:\s+([\d.]+)", re.M),
    "lat_max_ms": re.compile(r"^\s*max:\s+([\d.]+)", re.M),
    "lat_pct_ms": re.compile(r"^\s*\d+(?:\.\d+)?th percentile:\s+([\d.]+)", re.M),
    "lat_sum_ms": re.compile(r"^\s*sum:\s+([\d.]+)", re.M),
}
_PCT_NAME_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)th percentile:", re.M)


@dataclass(frozen=True)
class IntervalReport:
    """One `--report-interval 1` line: the second ending at `elapsed_s` of sysbench's clock."""

    elapsed_s: float
    threads: int
    tps: float
    qps: float | None
    lat_pct: float | None  # the percentile asked with --percentile (ms) of that second
    errors_per_s: float | None


@dataclass
class Statistics:
    """A statistics block (the checkpoint report or the final one)."""

    transactions: int | None = None
    tps: float | None = None  # sysbench's own rate: transactions over its own interval
    queries: int | None = None
    qps: float | None = None
    ignored_errors: int | None = None
    reconnects: int | None = None
    total_time_s: float | None = None  # since sysbench's start, not since the checkpoint
    events: int | None = None
    lat_min_ms: float | None = None
    lat_avg_ms: float | None = None
    lat_max_ms: float | None = None
    lat_pct_ms: float | None = None
    lat_pct: float | None = None  # which percentile lat_pct_ms is (--percentile)
    lat_sum_ms: float | None = None

    def as_dict(self) -> dict[str, float | int | None]:
        return dict(self.__dict__)


@dataclass
class Output:
    intervals: list[IntervalReport] = field(default_factory=list)
    checkpoint: Statistics | None = None
    final: Statistics | None = None
    histogram: list[tuple[float, int]] = field(default_factory=list)  # (bucket ms, count)


def parse_interval(line: str) -> IntervalReport | None:
    m = _INTERVAL_RE.match(line.strip())
    if m is None:
        return None
    qps, lat, err = _QPS_RE.search(line), _LAT_RE.search(line), _ERR_RE.search(line)
    return IntervalReport(
        elapsed_s=float(m.group(1)),
        threads=int(m.group(2)),
        tps=float(m.group(3)),
        qps=float(qps.group(1)) if qps else None,
        lat_pct=float(lat.group(2)) if lat else None,
        errors_per_s=float(err.group(1)) if err else None,
    )


def parse_statistics(block: str) -> Statistics | None:
    stats = Statistics()
    found = False
    for name, rx in _SUMMARY_RES.items():
        m = rx.search(block)
        if m:
            found = True
            setattr(stats, name, int(m.group(1)))
            rate = float(m.group(2))
            if name == "transactions":
                stats.tps = rate
            elif name == "queries":
                stats.qps = rate
    for name, rx in _FIGURE_RES.items():
        m = rx.search(block)
        if m:
            found = True
            setattr(stats, name, int(m.group(1)) if name == "events" else float(m.group(1)))
    pct = _PCT_NAME_RE.search(block)
    if pct:
        stats.lat_pct = float(pct.group(1))
    return stats if found else None


def parse(stdout: str) -> Output:
    """Everything sysbench printed on stdout. Its reporting thread and its main thread write
    concurrently, so per-second lines may fall inside a statistics block: blocks are cut at
    each "SQL statistics:" and read with line-anchored patterns that per-second lines do not
    match. With a checkpoint, the first block is the checkpoint's and the second the final
    one (absent when sysbench was stopped)."""
    out = Output()
    lines = stdout.splitlines()
    has_checkpoint = any("Checkpoint report:" in ln for ln in lines)
    starts = [i for i, ln in enumerate(lines) if ln.strip().startswith("SQL statistics:")]
    blocks = [
        "\n".join(lines[a : starts[k + 1] if k + 1 < len(starts) else len(lines)])
        for k, a in enumerate(starts)
    ]
    if has_checkpoint:
        out.checkpoint = parse_statistics(blocks[0]) if blocks else None
        out.final = parse_statistics(blocks[1]) if len(blocks) > 1 else None
    elif blocks:
        out.final = parse_statistics(blocks[-1])
    hist_at = _last_index(lines, "Latency histogram")
    for i, line in enumerate(lines):
        report = parse_interval(line)
        if report is not None:
            out.intervals.append(report)
        elif hist_at is not None and i > hist_at:
            row = _HIST_ROW_RE.match(line)
            if row:
                out.histogram.append((float(row.group(1)), int(row.group(2))))
    return out


def _last_index(lines: list[str], text: str) -> int | None:
    found = [i for i, ln in enumerate(lines) if ln.strip().startswith(text)]
    return found[-1] if found else None


def percentile(histogram: list[tuple[float, int]], fraction: float) -> float | None:
    """sysbench's rule: the first bucket whose cumulative count reaches round(n * fraction)."""
    n = sum(c for _v, c in histogram)
    if n == 0:
        return None
    rank = max(1, math.floor(n * fraction + 0.5))
    return value_at_rank(histogram, rank)


def value_at_rank(histogram: list[tuple[float, int]], rank: int) -> float | None:
    """The bucket value of the rank-th smallest latency (1-based), None outside 1..n."""
    if rank < 1:
        return None
    seen = 0
    for value, count in histogram:
        seen += count
        if seen >= rank:
            return value
    return None


def error_lines(stdout: str, stderr: str) -> list[str]:
    """sysbench's FATAL/ALERT lines (it prints them on stdout and stderr alike)."""
    found = []
    for line in (stderr + "\n" + stdout).splitlines():
        text = line.strip()
        if text.startswith(("FATAL:", "ALERT:")) and text not in found:
            found.append(text)
    return found
