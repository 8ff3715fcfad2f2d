"""What a run's load gave (load/engines/results.py and the drivers): window, stability, latency."""

from __future__ import annotations

from typing_extensions import TypedDict

__all__ = [
    "ChangePointDoc",
    "CrosscheckDoc",
    "FiguresFromDoc",
    "LatencyBasisDoc",
    "LoadEngineDoc",
    "PercentileCheck",
    "StabilityDoc",
    "TpccDoc",
    "TpccType",
    "TxlogDoc",
    "TxlogModeDoc",
    "WindowDoc",
]


class WindowDoc(TypedDict, total=False):
    """extra["window"]: where the measured window lay (analysis/window.py), for audits."""

    start_us: int  # the per-transaction log's clock
    end_us: int
    whole_seconds: int
    late_start_s: int
    source: str  # sysbench: its own window (--report-checkpoints)
    lead_in_s: int
    threads_started_after_s: float | None


class ChangePointDoc(TypedDict, total=False):
    """A level shift of a series (analysis/series.ChangePoint)."""

    t: float
    before: float
    after: float
    change_pct: float
    p: float


class StabilityDoc(TypedDict, total=False):
    """extra["stability"]: analysis.series.Stability.as_record() of the window's whole
    seconds; NaN is stored as None."""

    seconds: int
    n: int
    duration: float | None
    mean: float | None
    cv: float | None
    trend_pct_per_min: float | None
    trend_se_pct_per_min: float | None
    trend_p: float | None
    first_fifth_mean: float | None
    last_fifth_mean: float | None
    first_last_change_pct: float | None
    drift_flagged: bool
    reasons: list[str]
    change_points: list[ChangePointDoc]
    warmup_suggestion: float | None


class PercentileCheck(TypedDict, total=False):
    """sysbench's own percentile against the one read from its histogram."""

    percentile: float | None
    sysbench_ms: float | None
    from_histogram_ms: float | None
    agrees: bool
    hosts: dict[str, PercentileCheck]  # several load hosts: each one's own check


class LatencyBasisDoc(TypedDict, total=False):
    """extra["latency_basis"]: what the percentiles rest on (analysis/quantile_bounds.py)."""

    source: str
    samples: int
    population: int | None
    sampled: bool  # absent: samples < population means sampled (sysbench says False)
    resolution: str
    bounds: dict[str, list[float | None]]  # "p95" -> [lower, upper] at `confidence`
    confidence: float
    rests_on: str  # the sentence every surface shows
    sample_max_ms: float | None  # a sampled log: the sample's max, a lower bound of the run's
    check: PercentileCheck  # sysbench


class TxlogDoc(TypedDict, total=False):
    """extra["txlog"]: the per-transaction log's reading (load/engines/txlog_follower.py)."""

    files: int
    bytes_read: int
    max_backlog_bytes: int
    hole_punching: bool
    lines: int
    late_lines: int


class TxlogModeDoc(TypedDict, total=False):
    """extra["txlog_mode"]: the log mode chosen and why (load/engines/txlog_mode.py)."""

    mode: str  # full | sampled | off
    sampling_rate: float | None
    expected_tps: float | None
    basis: str


class CrosscheckDoc(TypedDict, total=False):
    """extra["crosscheck"]: pgbench's summary disagreed with its log (engines/crosscheck.py)."""

    summary_transactions: int | None
    logged_lines: int | None


class FiguresFromDoc(TypedDict, total=False):
    """extra["figures_from"]: pgbench printed no summary, the figures come from its progress
    lines (load/engines/progress_totals.py)."""

    source: str
    transactions: int
    window_s: float
    tps: float | None
    latency_avg_ms: float | None
    latency_stddev_ms: float | None
    failed: int | None
    skipped: int | None
    retried: int | None
    lines: int


class TpccType(TypedDict, total=False):
    """One TPC-C transaction type's figures over the window (workloads/tpcc/metrics.py)."""

    transactions: int
    failed: int
    retried: int
    per_minute: float | None
    share_pct: float | None
    latency_ms: dict[str, float | None]  # LatencyStats.as_dict(): avg, stddev, p50...


class TpccDoc(TypedDict, total=False):
    """extra["tpcc"]: NOPM, TPM, rollbacks, the mix and per-type figures."""

    nopm: float | None
    tpm: float | None
    new_orders: int
    rollbacks: int
    rollback_pct: float | None
    transactions: int
    failures: int
    retried: int
    tpm_per_nopm: float | None
    mix_pct: dict[str, float | None]  # type -> its share of the transactions
    types: dict[str, TpccType]


class LoadEngineDoc(TypedDict, total=False):
    """extra["load_engine"]: the load engine and its version (load/engines/driver.py)."""

    name: str  # pgbench | sysbench
    version: str | None
