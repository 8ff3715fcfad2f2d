"""pgbench per-transaction logs (-l) into results, as they are written, in constant memory.

A log line is `client_id transaction_no time_us script_no epoch_s epoch_us [lag_us] [retries]`
where time_us may read `skipped`, `failed`, `serialization` or `deadlock`. pgbench writes one
file per thread: <prefix>.<pid> and <prefix>.<pid>.<n>.

`TxlogStream` takes the lines in chunks (whatever a reader found appended to a file), parses each
chunk (txlog_parse.py: polars, plain integers when no line carries a word) and folds it into
fixed-size state: per script and per part of the run (before, inside and after the measured window)
the count of each status, retries, the latency moments and an HDR histogram (analysis/hdr.py: exact
below 2 ms, within 0.05% above); per grid second (analysis/window.py) the counts and, until every
thread has written past that second, a histogram for its percentiles. Nothing grows with the number
of transactions; per second only one row of figures is kept. Results are the same whatever the
chunking.

Counts, means, standard deviations, maxima and lag are exact; latency percentiles are exact
below 2,048 us and within 0.05% relative error above.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from pgrig.analysis import hdr
from pgrig.analysis.txlog_parse import (
    FAILED_CODES,
    OK,
    SKIPPED,
    STATUSES,
    UNKNOWN,
    Chunk,
    check_fields,
    end_of_last_line,
    parse_chunk,
)
from pgrig.analysis.window import US, Window, WindowPlan, grid_second, resolve
from pgrig.record.run import LatencyStats, ScriptResult

QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}
SERIES_QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
SERIES_KEYS = ("t", "tps", "failed", "skipped", "p50", "p95", "p99", "max")
MIN_BUCKET_COVERAGE_S = 0.5
# A second is closed (its percentiles computed, its histogram dropped) once every thread wrote
# past it, or at the latest this long after the newest line: a thread whose clients all died
# must not hold every later second open.
FORCE_CLOSE_AFTER_US = 120 * US

# --------------------------------------------------------------------------------------------
# accumulated figures


@dataclass
class _Totals:
    """One script's figures over one part of the run (fixed size, mergeable)."""

    status: np.ndarray = field(default_factory=lambda: np.zeros(len(STATUSES), np.int64))
    retried: int = 0
    retries: int = 0
    hist: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # ok latencies
    n: int = 0  # ok latencies: count, mean, sum of squared deviations (Chan et al.), max
    mean: float = 0.0
    m2: float = 0.0
    max_us: int | None = None
    lag_n: int = 0
    lag_sum: int = 0
    lag_max: int | None = None

    def add_moments(self, n: int, mean: float, m2: float, max_us: int | None) -> None:
        if n == 0:
            return
        total = self.n + n
        delta = mean - self.mean
        self.mean += delta * n / total
        self.m2 += m2 + delta * delta * self.n * n / total
        self.n = total
        self.max_us = _max(self.max_us, max_us)

    def add(self, c: Chunk) -> None:
        """Fold the lines of one script and part."""
        self.status += np.bincount(c.code, minlength=UNKNOWN + 1)[: len(STATUSES)]
        if c.retries is not None:
            self.retried += int(np.count_nonzero(c.retries > 0))
            self.retries += int(c.retries.sum())
        ok = c.ok
        lat = c.latency[ok]
        if lat.size == 0:
            return
        mean = float(lat.mean())
        self.add_moments(lat.size, mean, float(np.square(lat - mean).sum()), int(lat.max()))
        assert c.bucket is not None
        self.hist = hdr.add(self.hist, c.bucket[ok])
        if c.lag is not None:
            lag = c.lag[ok]
            self.lag_n += lag.size
            self.lag_sum += int(lag.sum())
            self.lag_max = _max(self.lag_max, int(lag.max()))

    def merge(self, other: _Totals) -> None:
        self.status += other.status
        self.retried += other.retried
        self.retries += other.retries
        self.hist = hdr.merge(self.hist, other.hist)
        self.add_moments(other.n, other.mean, other.m2, other.max_us)
        self.lag_n += other.lag_n
        self.lag_sum += other.lag_sum
        self.lag_max = _max(self.lag_max, other.lag_max)

    def latency(self) -> LatencyStats:
        """Latency (ms) of the ok transactions: exact mean, population stddev (as pgbench) and
        max; percentiles from the histogram."""
        if self.n == 0:
            return LatencyStats()
        q = hdr.quantiles(self.hist, QUANTILES)
        return LatencyStats(
            avg=self.mean / 1000.0,
            stddev=math.sqrt(max(0.0, self.m2 / self.n)) / 1000.0,
            max=(self.max_us or 0) / 1000.0,
            **{k: (v / 1000.0 if v is not None else None) for k, v in q.items()},
        )


def _max(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


@dataclass
class _Second:
    """One grid second: counts, and the latency histogram until the second is closed."""

    ok: int = 0
    failed: int = 0
    skipped: int = 0
    max_us: int | None = None
    hist: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # ok latencies
    quantiles: dict[str, float | None] | None = None  # set when closed

    def add(self, c: Chunk) -> int:
        """Fold the lines that ended in this second; returns how many came after it closed."""
        by_status = np.bincount(c.code, minlength=UNKNOWN + 1)
        n_ok = int(by_status[OK])
        self.ok += n_ok
        self.failed += int(sum(by_status[k] for k in FAILED_CODES))
        self.skipped += int(by_status[SKIPPED])
        late = int(by_status[: len(STATUSES)].sum()) if self.quantiles is not None else 0
        if n_ok:
            ok = c.ok
            self.max_us = _max(self.max_us, int(c.latency[ok].max()))
            if self.quantiles is None:
                assert c.bucket is not None
                self.hist = hdr.add(self.hist, c.bucket[ok])
        return late

    def close(self) -> None:
        self.quantiles = hdr.quantiles(self.hist, SERIES_QUANTILES)
        self.hist = np.zeros(0, np.int64)


# Parts of a -T run, by end time. Window seconds are kept apart ("pending", keyed by their grid
# second) until the window start is certain (see _resolve_start).
PRE, WINDOW, POST = -3, -2, -1


# --------------------------------------------------------------------------------------------
# summary


@dataclass
class TxlogSummary:
    """Figures over transactions whose END falls in [window_start_us, window_end_us)."""

    window_start_us: int
    window_end_us: int
    window_s: float
    transactions: int  # ok
    failed: int  # failed + serialization + deadlock
    serialization_failures: int
    deadlock_failures: int
    skipped: int
    retried: int | None  # transactions with retries > 0 (None: log has no retries column)
    retries: int | None  # total retries
    tps: float | None
    latency: LatencyStats
    window: Window
    lag_avg_ms: float | None = None
    lag_max_ms: float | None = None
    scripts: list[ScriptResult] = field(default_factory=list)
    # per grid second of end time, t = seconds from the window start (negative: warm-up); every
    # second from the first transaction to the last (a completed -T run: to the window's end)
    series: dict[str, list[float | None]] = field(default_factory=dict)
    lines: int = 0
    late_lines: int = 0  # lines that arrived after their second was closed (see FORCE_CLOSE..)
    # the window's ok latencies (analysis/hdr.py buckets): what percentile bounds rest on
    histogram: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def whole_seconds(self) -> tuple[list[float], list[float]]:
        """(t, tps) of the whole seconds inside the window: what statistics may use."""
        t, tps = self.series.get("t", []), self.series.get("tps", [])
        pairs = [
            (float(a), float(b))
            for a, b in zip(t, tps, strict=True)
            if a is not None and b is not None and 0 <= a < self.window.whole_seconds
        ]
        return [a for a, _ in pairs], [b for _, b in pairs]


# --------------------------------------------------------------------------------------------
# the stream


class TxlogStream:
    """Per-transaction log lines in, figures out; feed() may run in a reader thread while
    live() is read from another. See the module doc."""

    def __init__(
        self,
        *,
        origin_us: int,
        plan: WindowPlan,
        has_lag: bool,
        has_retries: bool,
        script_names: Sequence[str] = (),
        expected_sources: int | None = None,
    ) -> None:
        self.plan = plan
        self.has_lag = has_lag
        self.has_retries = has_retries
        self.script_names = list(script_names)
        self.expected_sources = expected_sources
        self.set_origin(origin_us)
        self._totals: dict[int, dict[int, _Totals]] = {}  # part -> script -> totals
        self._seconds: dict[int, _Second] = {}
        self._horizon: dict[str, int] = {}  # source -> latest end seen
        self._resolved_start: int | None = None  # the first start the window was decided on
        self._open: set[int] = set()  # seconds whose histogram is still kept
        self._first_start_ok: int | None = None
        self._first_end: int | None = None
        self._last_end: int | None = None
        self.lines = 0
        self.late_lines = 0
        self._live: tuple[float | None, float | None] = (None, None)
        self._lock = threading.Lock()

    def set_origin(self, origin_us: int) -> None:
        """Anchor the grid of seconds (before the first line is fed)."""
        self.origin_us = origin_us
        self._bounds = self.plan.bounds_us(origin_us)
        # -t runs measure everything: nothing to decide later
        self._window_start_us: int | None = None if self._bounds else origin_us

    # --- input --------------------------------------------------------------------------------
    def feed(self, data: bytes, source: str = "pgbench log") -> None:
        """Fold complete log lines (from one file) into the state."""
        self.feed_many([(source, data)])

    def feed_many(self, chunks: Sequence[tuple[str, bytes]], shift_us: int = 0) -> Chunk | None:
        """Fold complete log lines of several files (source, lines) in one go: one parse.
        shift_us is added to every end time: lines of a generator whose clock is off from the
        stream's by -shift_us (analysis/txlog_merge.py). Returns the parsed (shifted) lines."""
        chunks = [(source, data) for source, data in chunks if data]
        if not chunks:
            return None
        for source, data in chunks:  # every file has this run's fields
            check_fields(data, **self._format, source=source)
        lines = parse_chunk(b"".join(d for _, d in chunks), **self._format, source=chunks[0][0])
        if shift_us:
            lines = replace(lines, end_us=lines.end_us + shift_us)
        with self._lock:
            for source, data in chunks:  # a thread writes its lines in end-time order
                last = end_of_last_line(data) + shift_us
                self._horizon[source] = max(self._horizon.get(source, last), last)
            self._fold(lines)
        return lines

    @property
    def _format(self) -> dict[str, bool]:
        return {"has_lag": self.has_lag, "has_retries": self.has_retries}

    def _fold(self, c: Chunk) -> None:
        self.lines += c.code.size
        ok = c.ok
        self._first_end = _min(self._first_end, int(c.end_us.min()))
        self._last_end = _max(self._last_end, int(c.end_us.max()))
        if ok.any():
            self._first_start_ok = _min(
                self._first_start_ok, int((c.end_us[ok] - c.latency[ok]).min())
            )
        c = replace(c, bucket=hdr.bucket_index(c.latency))
        for part, in_part in _groups(self._part_of(c.end_us)):
            lines = c.take(in_part)
            for script, of_script in _groups(lines.script):
                self._cell(part, script).add(lines.take(of_script))
        for second, in_second in _groups((c.end_us - self.origin_us) // US):
            if second not in self._seconds:
                self._seconds[second] = _Second()
                self._open.add(second)
            self.late_lines += self._seconds[second].add(c.take(in_second))
        if self._window_start_us is None and (self._totals.get(PRE) or self._can_resolve()):
            self._resolve_start()
        self._close_seconds()

    def _part_of(self, end_us: np.ndarray) -> np.ndarray:
        """The part of the run (PRE, WINDOW, POST, or a pending window second) of each line."""
        if self._bounds is None:
            return np.full(end_us.size, WINDOW, np.int64)
        w0 = self._window_start_us if self._window_start_us is not None else self._bounds[0]
        w1 = max(self._bounds[1], w0)
        # window seconds stay apart until the start is known
        inside = WINDOW if self._window_start_us is not None else (end_us - self.origin_us) // US
        return np.where(end_us < w0, PRE, np.where(end_us < w1, inside, POST))

    def _cell(self, part: int, script: int) -> _Totals:
        return self._totals.setdefault(part, {}).setdefault(script, _Totals())

    # --- closing seconds and deciding the window start ------------------------------------------
    def _close_limit(self) -> int | None:
        """Seconds below this one will get no more lines (see FORCE_CLOSE_AFTER_US)."""
        if self._last_end is None:
            return None
        limit = grid_second(self.origin_us, self._last_end - FORCE_CLOSE_AFTER_US)
        expected = self.expected_sources or 0
        if self._horizon and len(self._horizon) >= expected:
            limit = max(limit, grid_second(self.origin_us, min(self._horizon.values())))
        return limit

    def _close_seconds(self, final: bool = False) -> None:
        limit = self._close_limit()
        if limit is None:
            return
        ready = sorted(s for s in self._open if final or s < limit)
        for second in ready:
            self._seconds[second].close()
            self._open.discard(second)
        if ready:
            s = self._seconds[ready[-1]]
            self._live = (float(s.ok), _ms((s.quantiles or {}).get("p95")))

    def _can_resolve(self) -> bool:
        """The first transaction's start is known once every thread wrote a whole second past
        the second it fell in."""
        limit = self._close_limit()
        start = self._first_start_ok if self._first_start_ok is not None else self._first_end
        return (
            limit is not None
            and start is not None
            and limit > grid_second(self.origin_us, start) + 1
        )

    def _resolve_start(self) -> None:
        """Decide the window start (window.resolve) and fold the pending window seconds."""
        assert self._bounds is not None
        start = self._first_start_ok if self._first_start_ok is not None else self._first_end
        if self._totals.get(PRE):  # something ended before the planned start: no late start
            start = min(start or self._bounds[0], self._bounds[0])
        self._resolved_start = start if start is not None else self._bounds[0]
        w = resolve(self.plan, self.origin_us, self._resolved_start, self._bounds[1], True)
        self._window_start_us = w.start_us
        first = w.first_second
        for part in [p for p in self._totals if p >= 0]:
            target = WINDOW if part >= first else PRE
            for script, totals in self._totals.pop(part).items():
                self._cell(target, script).merge(totals)

    # --- output ---------------------------------------------------------------------------------
    def live(self) -> tuple[float | None, float | None]:
        """(transactions, p95 ms) of the latest closed second: for a live display."""
        return self._live

    def finish(self, completed: bool) -> TxlogSummary | None:
        """The run's figures, once every line was fed (None when the log held no transaction).
        completed: pgbench ran to its end (a cut-short run measures up to its last line)."""
        with self._lock:
            if self._last_end is None or self._first_end is None:
                return None
            start = self._first_start_ok if self._first_start_ok is not None else self._first_end
            if self._bounds is not None and self._window_start_us is None:
                self._resolve_start()
            self._close_seconds(final=True)
            first = self._resolved_start if self._bounds is not None else start
            assert first is not None  # set by _resolve_start
            window = resolve(self.plan, self.origin_us, first, self._last_end, completed)
            return self._summary(window, start, completed)

    def _summary(self, window: Window, start: int, completed: bool) -> TxlogSummary:
        cells = self._totals.get(WINDOW, {})
        numbers = sorted(set(range(len(self.script_names))) | set(cells))
        window_s = (window.end_us - window.start_us) / US
        scripts: list[ScriptResult] = []
        total = _Totals()
        for no in numbers:
            t = cells.get(no, _Totals())
            total.merge(t)
            ok = int(t.status[OK])
            scripts.append(
                ScriptResult(
                    script_no=no,
                    name=self.script_names[no]
                    if 0 <= no < len(self.script_names)
                    else f"script {no}",
                    transactions=ok,
                    failed=int(sum(t.status[c] for c in FAILED_CODES)),
                    retried=t.retried,
                    skipped=int(t.status[SKIPPED]),
                    tps=ok / window_s if window_s > 0 else None,
                    latency=t.latency(),
                )
            )
        ok = int(total.status[OK])
        return TxlogSummary(
            window_start_us=window.start_us,
            window_end_us=window.end_us,
            window_s=window_s,
            transactions=ok,
            failed=int(sum(total.status[c] for c in FAILED_CODES)),
            serialization_failures=int(total.status[3]),
            deadlock_failures=int(total.status[4]),
            skipped=int(total.status[SKIPPED]),
            retried=total.retried if self.has_retries else None,
            retries=total.retries if self.has_retries else None,
            tps=ok / window_s if window_s > 0 else None,
            latency=total.latency(),
            window=window,
            lag_avg_ms=total.lag_sum / total.lag_n / 1000.0 if total.lag_n else None,
            lag_max_ms=total.lag_max / 1000.0 if total.lag_max is not None else None,
            scripts=scripts,
            histogram=total.hist,
            series=self._series(window, start, completed),
            lines=self.lines,
            late_lines=self.late_lines,
        )

    def _series(self, window: Window, start: int, completed: bool) -> dict[str, list]:
        """One row per grid second, t relative to the window start. Seconds with no
        transaction in between are present (tps 0): a stall must show. A completed -T run's
        series stops at the window's end (what follows is pgbench finishing its last
        transactions); the seconds at the run's edges may be partly covered, so their tps is
        divided by the covered time (at least MIN_BUCKET_COVERAGE_S)."""
        out: dict[str, list] = {k: [] for k in SERIES_KEYS}
        if not self._seconds or self._last_end is None:
            return out
        lo = min(min(self._seconds), grid_second(self.origin_us, start))
        hi = max(self._seconds)
        if completed and self._bounds is not None:
            hi = min(hi, grid_second(self.origin_us, window.end_us) - 1)
        run_start = min(start, window.start_us) if self._bounds is not None else start
        run_end = max(self._last_end + 1, window.measured_end_us if completed else 0)
        for second in range(lo, hi + 1):
            s = self._seconds.get(second, _Second(quantiles={}))
            b0 = self.origin_us + second * US
            covered = (min(b0 + US, run_end) - max(b0, run_start)) / US
            covered = min(1.0, max(MIN_BUCKET_COVERAGE_S, covered))
            q = s.quantiles or {}
            out["t"].append(second - window.first_second)
            out["tps"].append(s.ok / covered)
            out["failed"].append(s.failed)
            out["skipped"].append(s.skipped)
            for k in SERIES_QUANTILES:
                out[k].append(_ms(q.get(k)))
            out["max"].append(_ms(s.max_us))
        return out


def _groups(key: np.ndarray) -> list[tuple[int, np.ndarray | slice]]:
    """(value, selector) per distinct value of key; a chunk is usually one part, one script
    and one or two seconds, so the common case costs a min and a max."""
    if key.size == 0:
        return []
    lo, hi = int(key.min()), int(key.max())
    if lo == hi:
        return [(lo, slice(None))]
    # a few consecutive seconds: a count finds them without sorting
    values = np.flatnonzero(np.bincount(key - lo)) + lo if hi - lo < 4096 else np.unique(key)
    return [(int(v), key == v) for v in values]


def _min(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


def _ms(us: float | None) -> float | None:
    return None if us is None else float(us) / 1000.0
