"""pgbench per-transaction logs (-l) into results: exact latency quantiles, per script, per second.

A log line is `client_id transaction_no time_us script_no epoch_s epoch_us [lag_us] [retries]`
where time_us may read `skipped`, `failed`, `serialization` or `deadlock`. pgbench writes one
file per thread: <prefix>.<pid> and <prefix>.<pid>.<n>.

Speed matters (tens of millions of lines per run), so everything stays in polars: the time field
is read as a (short, inline) string, cast to an integer non-strictly, and the status is derived
from a small integer code gathered into an Enum, never by casting the whole string column.
Latency quantiles for the window and per script come from exact value counts (latencies are
integer microseconds, so there are few distinct values), not from re-sorting for every quantile.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
from polars.datatypes import DataTypeClass

from pgrig.archive.records import LatencyStats, ScriptResult
from pgrig.errors import PgrigError

STATUSES = ("ok", "skipped", "failed", "serialization", "deadlock")
STATUS = pl.Enum(list(STATUSES))
FAILED_STATUSES = ("failed", "serialization", "deadlock")
QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}

SCHEMA: dict[str, pl.DataType | DataTypeClass] = {
    "client": pl.Int32,
    "latency_us": pl.Int64,
    "status": STATUS,
    "script": pl.Int16,
    "end_us": pl.Int64,
    "lag_us": pl.Int64,
    "retries": pl.Int32,
}

_STATUS_LEVELS = pl.Series("status", list(STATUSES), dtype=STATUS)


def _raw_schema(has_lag: bool, has_retries: bool) -> dict[str, pl.DataType]:
    schema: dict[str, pl.DataType] = {
        "client": pl.Int32(),
        "txno": pl.Int64(),
        "time": pl.Utf8(),
        "script": pl.Int16(),
        "epoch_s": pl.Int64(),
        "epoch_us": pl.Int64(),
    }
    if has_lag:
        schema["lag_us"] = pl.Int64()
    if has_retries:
        schema["retries"] = pl.Int32()
    return schema


def _columns(has_lag: bool, has_retries: bool) -> list[pl.Expr]:
    """Raw log columns -> the public schema (see SCHEMA)."""
    t = pl.col("time")
    latency = t.str.to_integer(strict=False)
    # 0 ok (numeric time), 1.. the words pgbench writes; anything else stays null (unknown).
    code = (
        pl.when(latency.is_not_null())
        .then(0)
        .when(t == "skipped")
        .then(1)
        .when(t == "failed")
        .then(2)
        .when(t == "serialization")
        .then(3)
        .when(t == "deadlock")
        .then(4)
        .otherwise(None)
        .cast(pl.UInt32)
    )
    return [
        pl.col("client"),
        latency.alias("latency_us"),
        pl.lit(_STATUS_LEVELS).gather(code).alias("status"),
        pl.col("script"),
        (pl.col("epoch_s") * 1_000_000 + pl.col("epoch_us")).alias("end_us"),
        pl.col("lag_us") if has_lag else pl.lit(None, pl.Int64).alias("lag_us"),
        pl.col("retries") if has_retries else pl.lit(None, pl.Int32).alias("retries"),
    ]


def empty_frame() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


def _complete_bytes(data: bytes) -> bytes:
    """Only complete lines: a killed pgbench leaves a torn last line (possibly a valid-looking
    prefix such as a shortened epoch_us), so anything after the last newline is dropped."""
    cut = data.rfind(b"\n")
    return data[: cut + 1] if cut >= 0 else b""


def _ends_with_newline(path: Path) -> bool | None:
    """True/False for a non-empty plain file, None when it is empty."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        if f.tell() == 0:
            return None
        f.seek(-1, 2)
        return f.read(1) == b"\n"


def _check_fields(
    path: Path, first_line: bytes, expected: int, has_lag: bool, has_retries: bool
) -> None:
    n = len(first_line.split())
    if n != expected:
        raise PgrigError(
            f"{path}: pgbench log lines have {n} fields, expected {expected} "
            f"(has_lag={has_lag}, has_retries={has_retries}): not a per-transaction log of "
            "this run's options"
        )


def _first_line(path: Path) -> bytes:
    opener = gzip.open if _is_gzip(path) else open
    with opener(path, "rb") as f:
        return f.readline(4096)


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def read_txlogs(paths: Sequence[Path | str], *, has_lag: bool, has_retries: bool) -> pl.DataFrame:
    """Read pgbench per-transaction logs (plain or .gz) into one DataFrame.

    Columns: client Int32, latency_us Int64 (null unless the time field is numeric), status
    Enum(ok, skipped, failed, serialization, deadlock), script Int16, end_us Int64 (epoch
    microseconds), lag_us Int64 (null without -R), retries Int32 (null with --max-tries 1).
    Rows are not sorted. A torn last line (pgbench killed mid-write) is ignored.
    """
    schema = _raw_schema(has_lag, has_retries)
    expected = len(schema)
    frames: list[pl.LazyFrame] = []
    for p in paths:
        path = Path(p)
        if not path.is_file():
            raise PgrigError(f"pgbench log not found: {path}")
        gz = _is_gzip(path)
        if gz:
            data = _complete_bytes(gzip.decompress(path.read_bytes()))
            if not data:
                continue
            _check_fields(path, data[: data.find(b"\n")], expected, has_lag, has_retries)
            source: str | bytes = data
        else:
            complete = _ends_with_newline(path)
            if complete is None:
                continue
            first = _first_line(path)
            if not first.endswith(b"\n"):
                continue  # a single torn line and nothing else
            _check_fields(path, first, expected, has_lag, has_retries)
            source = str(path) if complete else _complete_bytes(path.read_bytes())
        lf = pl.scan_csv(source, separator=" ", has_header=False, schema=schema, quote_char=None)
        frames.append(lf.select(_columns(has_lag, has_retries)))
    if not frames:
        return empty_frame()
    try:
        return pl.concat(frames).collect()
    except pl.exceptions.PolarsError as e:
        names = ", ".join(str(p) for p in paths)
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PgrigError(f"cannot parse pgbench log ({names}): {reason}") from None


def infer_start_us(df: pl.DataFrame) -> int:
    """When pgbench started sending transactions: the earliest (end - latency).

    With -R the latency counts from the scheduled start, so this is the first scheduled start.
    """
    if df.height == 0:
        raise PgrigError("the pgbench log holds no transactions")
    start = df.select((pl.col("end_us") - pl.col("latency_us")).min()).item()
    if start is None:  # only skipped/failed lines: no latency anywhere
        start = df["end_us"].min()
    return int(start)


# --------------------------------------------------------------------------------------------
# summarize


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
    lag_avg_ms: float | None = None
    lag_max_ms: float | None = None
    scripts: list[ScriptResult] = field(default_factory=list)
    # per 1 s bucket of end time, t = bucket start in seconds relative to the window start
    # (negative during the warm-up); every bucket from the first to the last transaction
    series: dict[str, list[float | None]] = field(default_factory=dict)


def _stats_from_counts(values: np.ndarray, counts: np.ndarray) -> LatencyStats:
    """Exact stats (ms) of a multiset of integer microseconds given as sorted (value, count).

    Quantiles use linear interpolation between order statistics (numpy's default, type 7);
    stddev is the population one, as pgbench reports it.
    """
    n = int(counts.sum())
    if n == 0:
        return LatencyStats()
    v = values.astype(np.float64)
    c = counts.astype(np.float64)
    mean = float((v * c).sum() / n)
    std = float(math.sqrt(max(0.0, float((c * (v - mean) ** 2).sum()) / n)))
    cum = np.cumsum(counts)
    out: dict[str, float] = {}
    for name, q in QUANTILES.items():
        h = (n - 1) * q
        lo, hi = math.floor(h), math.ceil(h)
        x_lo = v[np.searchsorted(cum, lo, side="right")]
        x_hi = v[np.searchsorted(cum, hi, side="right")]
        out[name] = float(x_lo + (h - lo) * (x_hi - x_lo)) / 1000.0
    return LatencyStats(avg=mean / 1000.0, stddev=std / 1000.0, max=float(v[-1]) / 1000.0, **out)


def summarize(
    df: pl.DataFrame, *, window_start_us: int, window_end_us: int, script_names: list[str]
) -> TxlogSummary:
    """Results over the transactions that END inside [window_start_us, window_end_us).

    Latency figures are over ok transactions only; tps = ok / window seconds. Per script the
    same (scripts in script_names order, plus any other script number found). The per-second
    series covers ALL the data, warm-up included, so charts can shade it.
    """
    if window_end_us < window_start_us:
        raise PgrigError(
            f"measurement window ends before it starts: {window_end_us} < {window_start_us} (us)"
        )
    # An empty window (a run aborted during its warm-up) still gives counts of 0 and the series;
    # rates over it are None, not invented.
    window_s = (window_end_us - window_start_us) / 1e6
    lf = df.lazy()
    in_window = lf.filter(pl.col("end_us").is_between(window_start_us, window_end_us, "left"))
    ok = pl.col("status") == "ok"
    hist_q = in_window.filter(ok).group_by("script", "latency_us").len().sort("latency_us")
    counts_q = in_window.group_by("script", "status").agg(
        pl.len().alias("n"),
        (pl.col("retries") > 0).sum().alias("retried"),
        pl.col("retries").sum().alias("retries"),
    )
    lag_q = in_window.filter(ok).select(
        pl.col("lag_us").mean().alias("avg"), pl.col("lag_us").max().alias("max")
    )
    hist, counts, lag = pl.collect_all([hist_q, counts_q, lag_q])

    has_retries = df.height > 0 and df["retries"].null_count() < df.height
    by_script: dict[int, dict[str, int]] = {}
    for script, status, n, retried, retries in counts.iter_rows():
        d = by_script.setdefault(int(script), {s: 0 for s in (*STATUSES, "retried", "retries")})
        if status is not None:
            d[status] += n
        d["retried"] += retried or 0
        d["retries"] += retries or 0

    scripts: list[ScriptResult] = []
    numbers = sorted(set(range(len(script_names))) | set(by_script))
    for no in numbers:
        d = by_script.get(no, {s: 0 for s in (*STATUSES, "retried", "retries")})
        h = hist.filter(pl.col("script") == no)
        lat = _stats_from_counts(h["latency_us"].to_numpy(), h["len"].to_numpy())
        scripts.append(
            ScriptResult(
                script_no=no,
                name=script_names[no] if 0 <= no < len(script_names) else f"script {no}",
                transactions=d["ok"],
                failed=sum(d[s] for s in FAILED_STATUSES),
                retried=d["retried"],
                skipped=d["skipped"],
                tps=d["ok"] / window_s if window_s > 0 else None,
                latency=lat,
            )
        )

    merged = hist.group_by("latency_us").agg(pl.col("len").sum()).sort("latency_us")
    total = {s: sum(d[s] for d in by_script.values()) for s in (*STATUSES, "retried", "retries")}
    lag_avg, lag_max = lag.row(0)
    return TxlogSummary(
        window_start_us=window_start_us,
        window_end_us=window_end_us,
        window_s=window_s,
        transactions=total["ok"],
        failed=sum(total[s] for s in FAILED_STATUSES),
        serialization_failures=total["serialization"],
        deadlock_failures=total["deadlock"],
        skipped=total["skipped"],
        retried=total["retried"] if has_retries else None,
        retries=total["retries"] if has_retries else None,
        tps=total["ok"] / window_s if window_s > 0 else None,
        latency=_stats_from_counts(merged["latency_us"].to_numpy(), merged["len"].to_numpy()),
        lag_avg_ms=lag_avg / 1000.0 if lag_avg is not None else None,
        lag_max_ms=lag_max / 1000.0 if lag_max is not None else None,
        scripts=scripts,
        series=per_second(df, window_start_us),
    )


MIN_BUCKET_COVERAGE_S = 0.5


def per_second(df: pl.DataFrame, origin_us: int) -> dict[str, list[float | None]]:
    """One row per 1 s bucket of end time, aligned on origin_us (the window start).

    t: bucket start (s, relative to origin); tps: ok per second; failed and skipped: counts in
    the bucket; p50/p95/p99/max: latency of ok transactions (ms, None when none). Buckets with
    no transaction in between are present (tps 0): a stall must show. The first and last buckets
    may be only partly covered by the run; their tps is divided by the covered time (at least
    MIN_BUCKET_COVERAGE_S, so a sliver of a second cannot spike).
    """
    keys = ("t", "tps", "failed", "skipped", "p50", "p95", "p99", "max")
    if df.height == 0:
        return {k: [] for k in keys}
    bucket = ((pl.col("end_us") - origin_us) // 1_000_000).alias("t")
    lat = pl.col("latency_us")
    lf = df.lazy().with_columns(bucket)
    ok_q = (
        lf.filter(pl.col("status") == "ok")
        .group_by("t")
        .agg(
            pl.len().alias("ok"),
            lat.quantile(0.5, "linear").alias("p50"),
            lat.quantile(0.95, "linear").alias("p95"),
            lat.quantile(0.99, "linear").alias("p99"),
            lat.max().alias("max"),
        )
    )
    bad_q = (
        lf.filter(pl.col("status") != "ok")
        .group_by("t")
        .agg(
            pl.col("status").is_in(FAILED_STATUSES).sum().alias("failed"),
            (pl.col("status") == "skipped").sum().alias("skipped"),
        )
    )
    span_q = lf.select(
        pl.col("t").min().alias("t0"),
        pl.col("t").max().alias("t1"),
        (pl.col("end_us") - lat).min().alias("start"),
        pl.col("end_us").max().alias("end"),
    )
    ok_df, bad_df, span = pl.collect_all([ok_q, bad_q, span_q])
    t0, t1, start, end = span.row(0)
    if start is None:
        start = end
    t0 = min(t0, (start - origin_us) // 1_000_000)
    grid = pl.DataFrame({"t": pl.int_range(t0, t1 + 1, eager=True).cast(pl.Int64)})
    s = (
        grid.join(ok_df, on="t", how="left")
        .join(bad_df, on="t", how="left")
        .with_columns(
            pl.col("ok", "failed", "skipped").fill_null(0),
            # covered part of each bucket: [origin + t, origin + t + 1s) within [start, end]
            (
                (
                    pl.min_horizontal(origin_us + (pl.col("t") + 1) * 1_000_000, end + 1)
                    - pl.max_horizontal(origin_us + pl.col("t") * 1_000_000, start)
                )
                / 1e6
            )
            .clip(MIN_BUCKET_COVERAGE_S, 1.0)
            .alias("covered"),
        )
        .with_columns(
            (pl.col("ok") / pl.col("covered")).alias("tps"),
            (pl.col("p50", "p95", "p99", "max").cast(pl.Float64) / 1000.0),
        )
        .sort("t")
    )
    return {k: s[k].to_list() for k in keys}


# --------------------------------------------------------------------------------------------
# live tail


class LiveTail:
    """Cheap live figures from the growing logs: poll() -> (tps, p95 ms) over the last second.

    Each poll reads only bytes appended since the previous one (per file; files appear as
    pgbench threads start: <prefix>.<pid>, <prefix>.<pid>.<n>), parses the new complete lines
    with polars, and keeps just the last second of (end, latency). "Last second" is in log
    time: the second before the latest end time seen. pgbench buffers its log writes, so a
    thread's lines arrive in bursts; at low rates the figure lags by up to a buffer.
    """

    WINDOW_US = 1_000_000

    def __init__(self, log_prefix: Path | str) -> None:
        self.prefix = Path(log_prefix)
        self._offsets: dict[Path, int] = {}
        self._partial: dict[Path, bytes] = {}
        self._end = np.empty(0, dtype=np.int64)
        self._lat = np.empty(0, dtype=np.int64)

    def _files(self) -> list[Path]:
        parent = self.prefix.parent
        if not parent.is_dir():
            return []
        return [
            p for p in parent.glob(self.prefix.name + ".*") if p.suffix != ".gz" and p.is_file()
        ]

    def _new_lines(self) -> bytes:
        chunks = []
        for path in self._files():
            offset = self._offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read()
            except OSError:
                continue
            if not data:
                continue
            self._offsets[path] = offset + len(data)
            data = self._partial.pop(path, b"") + data
            cut = data.rfind(b"\n")
            if cut < len(data) - 1:
                self._partial[path] = data[cut + 1 :]
            if cut >= 0:
                chunks.append(data[: cut + 1])
        return b"".join(chunks)

    def poll(self) -> tuple[float | None, float | None]:
        data = self._new_lines()
        if data:
            # Only time and end matter; lag/retries columns (if any) are read and dropped.
            n = len(data[: data.find(b"\n")].split())
            schema = {**_raw_schema(False, False), **{f"x{i}": pl.Int64() for i in range(6, n)}}
            frame = (
                pl.scan_csv(data, separator=" ", has_header=False, schema=schema, quote_char=None)
                .select(
                    (pl.col("epoch_s") * 1_000_000 + pl.col("epoch_us")).alias("end"),
                    pl.col("time").str.to_integer(strict=False).alias("lat"),
                )
                .filter(pl.col("lat").is_not_null())
                .collect()
            )
            self._end = np.concatenate([self._end, frame["end"].to_numpy()])
            self._lat = np.concatenate([self._lat, frame["lat"].to_numpy()])
        if self._end.size == 0:
            return None, None
        latest = int(self._end.max())
        keep = self._end > latest - self.WINDOW_US
        self._end, self._lat = self._end[keep], self._lat[keep]
        p95 = float(np.percentile(self._lat, 95)) / 1000.0 if self._lat.size else None
        return float(self._end.size), p95
