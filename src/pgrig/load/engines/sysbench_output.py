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
# sysbench.report_csv, which a script may make its per-second report (sysbench-tpcc does, with
# --report-csv=yes): time, threads, tps, qps, reads/s, writes/s, other/s, percentile (ms),
# errors/s, reconnects/s
_CSV_RE = re.compile(
    r"^(\d+),(\d+),([\d.]+),([\d.]+),[\d.]+,[\d.]+,[\d.]+,([\d.]+),([\d.]+),[\d.]+$"
)
_QPS_RE = re.compile(r"qps:\s*([\d.]+)")
_LAT_RE = re.compile(r"lat \(ms,(\d+(?:\.\d+)?)%\):\s*([\d.]+)")
# sysbench.report_default (the Lua report of scripts with their own hook) prints "err/s N"
_ERR_RE = re.compile(r"err/s:?\s*([\d.]+)")
HISTOGRAM_HEADER = "Latency histogram"
# a header glued after the text of a line (see _cut_glued_headers)
_GLUED_RE = re.compile(
    r"(?<=.)(?=\[\s*\d+s\s*\]|SQL statistics:|General statistics:|" + HISTOGRAM_HEADER + ")"
)
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
    parts: dict[str, Output] = field(default_factory=dict)  # merged: each load host's own


def parse_interval(line: str) -> IntervalReport | None:
    m = _INTERVAL_RE.match(line.strip())
    if m is None:
        return _csv_interval(line.strip())
    qps, lat, err = _QPS_RE.search(line), _LAT_RE.search(line), _ERR_RE.search(line)
    return IntervalReport(
        elapsed_s=float(m.group(1)),
        threads=int(m.group(2)),
        tps=float(m.group(3)),
        qps=float(qps.group(1)) if qps else None,
        lat_pct=float(lat.group(2)) if lat else None,
        errors_per_s=float(err.group(1)) if err else None,
    )


def _csv_interval(line: str) -> IntervalReport | None:
    m = _CSV_RE.match(line)
    if m is None:
        return None
    return IntervalReport(
        elapsed_s=float(m.group(1)),
        threads=int(m.group(2)),
        tps=float(m.group(3)),
        qps=float(m.group(4)),
        lat_pct=float(m.group(5)),
        errors_per_s=float(m.group(6)),
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
    lines = _cut_glued_headers(stdout.splitlines())
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
    hist_at = _last_index(lines, HISTOGRAM_HEADER)
    for i, line in enumerate(lines):
        report = parse_interval(line)
        if report is not None:
            out.intervals.append(report)
        elif hist_at is not None and i > hist_at:
            row = _HIST_ROW_RE.match(line)
            if row:
                out.histogram.append((float(row.group(1)), int(row.group(2))))
    return out


def _cut_glued_headers(lines: list[str]) -> list[str]:
    """Every report and block header on a line of its own. Lua's print writes a line and its
    newline apart, so another thread's output can land between them: sysbench cancels its
    reporting thread at the end of --time, which is also when that thread's last per-second
    report is due, and a script's report hook (sysbench-tpcc's) then leaves
    "... reconn/s: 0.00Latency histogram (values are in milliseconds)" (6 of 200 runs, 8 at
    once); the checkpoint's report, due with a per-second one, can land there too."""
    cut: list[str] = []
    for line in lines:
        cut += _GLUED_RE.split(line) if _GLUED_RE.search(line, 1) else [line]
    return cut


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


# --- several load hosts, one run -------------------------------------------------------------


def merge(parts: dict[str, Output]) -> Output:
    """One run's output from the sysbench of each load host (each started at one instant, each
    with the same --time and checkpoint): counts and rates add (each host's rate is over its
    own window, of the same length), the histograms add bucket by bucket (sysbench's buckets
    are fixed), min and max are the extremes, avg is the mean over every event. A percentile
    cannot be added: the merged per-second series has none, and the run's come from the
    merged histogram. A statistics block that one host lacks (it was stopped) is missing from
    the merged output too."""
    outs = list(parts.values())
    merged = Output(parts=dict(parts))
    by_second: dict[float, list[IntervalReport]] = {}
    for out in outs:
        for r in out.intervals:
            by_second.setdefault(r.elapsed_s, []).append(r)
    merged.intervals = [
        IntervalReport(
            elapsed_s=second,
            threads=sum(r.threads for r in rs),
            tps=round(sum(r.tps for r in rs), 2),
            qps=_sum_or_none([r.qps for r in rs]),
            lat_pct=None,
            errors_per_s=_sum_or_none([r.errors_per_s for r in rs]),
        )
        for second, rs in sorted(by_second.items())
    ]
    merged.checkpoint = merge_statistics([o.checkpoint for o in outs])
    merged.final = merge_statistics([o.final for o in outs])
    buckets: dict[float, int] = {}
    for out in outs:
        for value, count in out.histogram:
            buckets[value] = buckets.get(value, 0) + count
    merged.histogram = sorted(buckets.items())
    return merged


def merge_statistics(blocks: list[Statistics | None]) -> Statistics | None:
    if not blocks or any(b is None for b in blocks):
        return None
    stats = [b for b in blocks if b is not None]
    events = _sum_or_none([s.events for s in stats])
    lat_sum = _sum_or_none([s.lat_sum_ms for s in stats])
    return Statistics(
        transactions=_int_sum([s.transactions for s in stats]),
        tps=_sum_or_none([s.tps for s in stats]),
        queries=_int_sum([s.queries for s in stats]),
        qps=_sum_or_none([s.qps for s in stats]),
        ignored_errors=_int_sum([s.ignored_errors for s in stats]),
        reconnects=_int_sum([s.reconnects for s in stats]),
        total_time_s=max((s.total_time_s for s in stats if s.total_time_s is not None),
                         default=None),
        events=int(events) if events is not None else None,
        lat_min_ms=min((s.lat_min_ms for s in stats if s.lat_min_ms is not None), default=None),
        lat_avg_ms=(
            round(lat_sum / events, 3) if lat_sum is not None and events else None
        ),
        lat_max_ms=max((s.lat_max_ms for s in stats if s.lat_max_ms is not None), default=None),
        lat_pct_ms=None,  # a percentile of several hosts is not the sum of theirs
        lat_pct=stats[0].lat_pct,
        lat_sum_ms=lat_sum,
    )  # fmt: skip


def _sum_or_none(values: list[float | None] | list[int | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return round(sum(float(v) for v in values if v is not None), 3)


def _int_sum(values: list[int | None]) -> int | None:
    total = _sum_or_none(values)
    return int(total) if total is not None else None
