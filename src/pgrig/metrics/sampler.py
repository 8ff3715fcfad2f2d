"""One background thread sampling every source on wall-clock ticks into columnar lists.

Sources are anything with a name and sample() -> dict (OsSampler, PgSampler, later a pooler
sampler). Each tick stores one row per source: ts (epoch seconds), up (1 when the source
answered, 0 when it raised or returned {}) and its columns. A column that first appears
late (a wait event, a process group added mid-run) is backfilled so every list of a kind
has the same length: with None, or with 0 for rows where the source answered if the column
matches one of the source's sparse_prefixes ("absent" means "zero" for counts of things seen).
stop() returns {"os": {"ts": [...], "cpu_user": [...]}, "pg": {...}} for RunRecord.series.

Cost: the thread does nothing between ticks (Event.wait), each tick appends to lists; the
sampler's own thread CPU is tracked (cpu_seconds, samples) so runs can state the overhead.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from pgrig import interrupts
from pgrig.errors import first_line
from pgrig.record.run import RunSeries, SeriesColumns

Value = float | int | None
Series = RunSeries


@runtime_checkable
class Source(Protocol):
    """What the Sampler samples. Optional extras, looked up with getattr:
    sparse_prefixes: tuple[str, ...] (see module docstring) and close() called by stop()."""

    name: str

    def sample(self) -> dict[str, Value]: ...


class _Columns:
    """The columnar store of one source."""

    def __init__(self, sparse_prefixes: Iterable[str]) -> None:
        self.sparse = tuple(sparse_prefixes)
        self.data: SeriesColumns = {"ts": [], "up": []}
        self.n = 0

    def append(self, ts: float, row: dict[str, Value] | None) -> None:
        data, n = self.data, self.n
        up = 1 if row else 0
        data["ts"].append(ts)
        data["up"].append(up)
        filled = 2
        if row:
            for key, value in row.items():
                col = data.get(key)
                if col is None:
                    col = data[key] = self._backfill(key)
                elif len(col) > n:  # "ts" and "up" are the sampler's, not the source's
                    continue
                col.append(value)
                filled += 1
        if filled < len(data):  # some known column missing from this row
            for key, col in data.items():
                if len(col) == n:
                    col.append(0 if up and key.startswith(self.sparse) else None)
        self.n = n + 1

    def snapshot(self, n: int) -> SeriesColumns:
        """Copies of the first n rows, while another thread may still be appending."""
        return {key: col[:n] for key, col in list(self.data.items()) if len(col) >= n}

    def _backfill(self, key: str) -> list[Any]:
        if self.sparse and key.startswith(self.sparse):
            return [0 if u else None for u in self.data["up"][: self.n]]
        return [None] * self.n


class Sampler:
    """Samples `os`, `pg` and extra sources every `interval` seconds in one daemon thread.

    Ticks are aligned to multiples of `interval` on the wall clock (12:00:01.000, ...), so
    series of different runs and of pgbench's own per-second output line up. A tick missed
    because sampling took too long is skipped, never caught up in a burst.
    """

    def __init__(
        self,
        os: Source | None,
        pg: Source | None = None,
        interval: float = 1.0,
        extra: Iterable[Source] = (),
    ) -> None:
        if not interval > 0:
            raise ValueError(f"sampling interval must be positive, got {interval!r}")
        self.interval = float(interval)
        self.stop_timeout = self.interval + 10.0  # how long stop() waits for a slow source
        self._sources: list[Source] = []
        self._columns: dict[str, _Columns] = {}
        self._latest: dict[str, dict[str, Value]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.cpu_seconds = 0.0  # the sampling thread's own CPU time, all ticks
        self.samples = 0
        self.errors: dict[str, str] = {}  # source name -> last exception text
        for source in (os, pg, *extra):
            if source is not None:
                self.add_source(source)

    def add_source(self, source: Source) -> None:
        """Register a source (e.g. a pooler sampler) before start()."""
        if self._thread is not None:
            raise RuntimeError("add sources before Sampler.start()")
        if source.name in self._columns or source.name in ("ts", "up"):
            raise ValueError(f"a sampler source named {source.name!r} is already registered")
        self._sources.append(source)
        self._columns[source.name] = _Columns(getattr(source, "sparse_prefixes", ()))

    def source(self, name: str) -> Source | None:
        """The registered source called `name` (for its own summary after the run)."""
        return next((s for s in self._sources if s.name == name), None)

    # --- life cycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Prime every source (rates of the first row then cover one interval) and start."""
        if self._thread is not None:
            raise RuntimeError("Sampler already started")
        for source in self._sources:
            self._sample_one(source)  # discarded: a baseline for rates
        self._thread = threading.Thread(target=self._run, name="pgrig-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> Series:
        """Stop the thread, close the sources, return every series (safe to call twice)."""
        self._stop.set()
        if self._thread is not None:
            interrupts.join(self._thread, timeout=self.stop_timeout)
        stuck = self._thread is not None and self._thread.is_alive()
        if stuck:  # a source hangs (a frozen server): leave it alone, copy what is complete
            self.errors["sampler"] = "a source was still sampling when the run stopped"
            return self.snapshot()
        for source in self._sources:
            close = getattr(source, "close", None)
            if close is not None:
                try:
                    close()
                except Exception as e:
                    self.errors[source.name] = first_line(e, named=True)
        return {name: cols.data for name, cols in self._columns.items()}

    def snapshot(self) -> Series:
        """Copies of the rows every source completed so far, while the thread samples on."""
        n = min((cols.n for cols in self._columns.values()), default=0)
        return {name: cols.snapshot(n) for name, cols in self._columns.items()}

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def latest(self) -> dict[str, dict[str, Value]]:
        """The last row of every source, with its ts (for a live display)."""
        return dict(self._latest)

    def cpu_ms_per_sample(self) -> float | None:
        return self.cpu_seconds * 1000.0 / self.samples if self.samples else None

    # --- the thread ----------------------------------------------------------------------------
    def _run(self) -> None:
        interval = self.interval
        tick = next_tick(time.time(), interval)
        while not self._stop.wait(max(0.0, tick - time.time())):
            c0 = time.thread_time()
            ts = time.time()
            for source in self._sources:
                row = self._sample_one(source)
                self._columns[source.name].append(ts, row)
                self._latest[source.name] = {"ts": ts, **(row or {})}
            self.samples += 1
            self.cpu_seconds += time.thread_time() - c0
            tick += interval
            now = time.time()
            if tick <= now:  # overran: skip to the next tick still ahead
                tick = next_tick(now, interval)

    def _sample_one(self, source: Source) -> dict[str, Value] | None:
        try:
            return source.sample()
        except Exception as e:  # a source must never kill the thread or the run
            self.errors[source.name] = first_line(e, named=True)
            return None


def next_tick(now: float, interval: float) -> float:
    """The first multiple of `interval` (epoch seconds) strictly after `now`."""
    return math.floor(now / interval) * interval + interval


def window_summary(series: Series, t0: float, t1: float) -> dict[str, float | None]:
    """Figures over ts in (t0, t1] for RunRecord: mean cpu_user/system/iowait/idle (os) and
    hit_ratio over the window from the pg per-second block rates (None when not sampled)."""
    out: dict[str, float | None] = {}
    os_s = series.get("os", {})
    for col in ("cpu_user", "cpu_system", "cpu_iowait", "cpu_idle", "cpu_steal"):
        vals = [v for v in _window(os_s, col, t0, t1) if v is not None]
        out[col] = sum(vals) / len(vals) if vals else None
    pg_s = series.get("pg", {})
    pairs = zip(_window(pg_s, "blks_hit", t0, t1), _window(pg_s, "blks_read", t0, t1), strict=True)
    hit = read = 0.0
    for h, r in pairs:
        if h is not None and r is not None:
            hit, read = hit + h, read + r
    out["hit_ratio"] = 100.0 * hit / (hit + read) if hit + read > 0 else None
    return out


def _window(kind: SeriesColumns, col: str, t0: float, t1: float) -> list[float | None]:
    ts, values = kind.get("ts", []), kind.get(col)
    if values is None:
        return []
    return [v for t, v in zip(ts, values, strict=True) if t is not None and t0 < t <= t1]
