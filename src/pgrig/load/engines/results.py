"""Turning what a run left behind into RunRecord figures.

The per-transaction log (already folded by analysis.txlog.TxlogStream while pgbench ran) gives
the measured window, TPS, failures, latency percentiles, per-script figures, the per-second
series and its stability; the samplers' rows are re-based on the window's start; TPC-C runs get
NOPM and TPM from their per-type figures. Nothing here talks to a server or to the archive.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pgrig.analysis.txlog import TxlogSummary
from pgrig.archive.records import LatencyStats, RunRecord, ScriptResult
from pgrig.load.engines import pgbench_output
from pgrig.record.documents import StabilityDoc, TxlogDoc
from pgrig.record.run import SeriesColumns
from pgrig.request import RunRequest


def fill_results(
    rec: RunRecord,
    spec: RunRequest,
    completed: bool,
    txlog: TxlogSummary | None,
    stdout: str,
    stderr: str,
    progress_points: list[Any],
    series_raw: dict[str, dict[str, list]],
) -> None:
    """txlog: what the per-transaction log gave (None: no transaction was logged)."""
    summary = pgbench_output.parse_summary(stdout, stderr) if stdout.strip() else None
    window_start_s: float | None = None
    if txlog is not None:
        window = txlog.window
        window_start_s = window.start_us / 1e6
        rec.measured_s = window.measured_s
        rec.transactions = txlog.transactions
        rec.failed = txlog.failed
        rec.retried = txlog.retried
        rec.skipped = txlog.skipped
        rec.tps = txlog.transactions / rec.measured_s if rec.measured_s > 0 else None
        rec.latency = txlog.latency
        rec.scripts = script_results(txlog.scripts, spec, rec.measured_s)
        rec.series["pgbench"] = txlog.series
        rec.extra["window"] = {  # where the window lay (analysis/window.py), for audits
            "start_us": window.start_us,
            "end_us": window.end_us,
            "whole_seconds": window.whole_seconds,
            "late_start_s": window.late_start_s,
        }
        rec.extra["stability"] = stability_record(*txlog.whole_seconds)
        if window.late_start_s:
            rec.add_warning(
                "late_start",
                f"the clients took longer than the warm-up to connect: the measured window "
                f"starts {window.late_start_s} s late and lasts {rec.measured_s:g} s "
                f"(give --warmup of at least {spec.warmup_s + window.late_start_s:g} s)",
            )
    if window_start_s is None and progress_points:
        # No usable log (killed before flushing): keep pgbench's own per-second progress.
        rec.series["pgbench"] = progress_series(progress_points, spec.warmup_s)
    if summary is not None:
        rec.extra["pgbench_summary"] = summary.as_dict() if hasattr(summary, "as_dict") else None
    attach_samples(rec, series_raw, window_start_s)
    from pgrig.workloads import scenario

    scenario.of(rec.workload, (s.name for s in rec.scripts)).add_results(rec)  # TPC-C's NOPM


def cross_check(
    rec: RunRecord,
    stdout: str,
    stderr: str,
    progress_points: list[Any],
    work_dir: Path | None,
) -> str | None:
    """The run's figures against pgbench's own summary (load/engines/crosscheck.py), for a run that
    completed: on a disagreement the figures from the log are dropped (never a 0 recorded as
    a result; pgbench's summary stays in extra["pgbench_summary"], its per-second progress
    becomes the series) and the reason is returned, to fail the run with."""
    from pgrig.load.engines import crosscheck

    summary = pgbench_output.parse_summary(stdout, stderr) if stdout.strip() else None
    found_log = rec.extra.get("txlog")
    txlog: TxlogDoc = found_log if isinstance(found_log, dict) else {}
    found = crosscheck.check(
        summary,
        logged_lines=txlog.get("lines"),
        window_transactions=rec.transactions,
        clients=rec.clients,
        work_dir=work_dir,
        log_error=rec.extra.get("results_error"),
    )
    if found is None:
        return None
    for name in ("tps", "transactions", "failed", "retried", "skipped", "measured_s"):
        setattr(rec, name, None)
    rec.latency = LatencyStats()
    rec.scripts = []
    for name in ("nopm", "tpm", "rollbacks"):
        setattr(rec, name, None)
    rec.extra.pop("stability", None)
    rec.extra.pop("tpcc", None)
    rec.series.pop("pgbench", None)
    if progress_points:
        rec.series["pgbench"] = progress_series(progress_points, rec.warmup_s)
    rec.extra["crosscheck"] = {
        "summary_transactions": found.summary_transactions,
        "logged_lines": found.logged_lines,
    }
    return found.message


def progress_series(points: list[Any], warmup_s: float) -> SeriesColumns:
    """pgbench's own per-second progress (-P 1) as a series, t from the window's start."""
    return {
        "t": [p.elapsed_s - warmup_s for p in points],
        "tps": [p.tps for p in points],
        "lat_avg": [p.latency_ms for p in points],
    }


def sample_origin(rec: RunRecord) -> float | None:
    """Where the window starts when the per-transaction log did not tell: the planned start."""
    return rec.started_at.timestamp() + rec.warmup_s if rec.started_at is not None else None


def rebased(cols: SeriesColumns, origin: float) -> SeriesColumns | None:
    """A sampler's columns with epoch "ts" replaced by "t", seconds from `origin`."""
    cols = dict(cols)
    ts = cols.pop("ts", None)
    if ts is None:
        return None
    return {"t": [None if x is None else round(x - origin, 3) for x in ts], **cols}


def stability_record(t: list[float], tps: list[float]) -> StabilityDoc:
    """Per-second stability of the whole seconds of the window, stored once with the run
    (extra["stability"]) so that every report shows the same figures."""
    from pgrig.analysis import series

    return {"seconds": len(t), **series.stability(t, tps).as_record()}


def script_results(scripts: list[ScriptResult], spec: RunRequest, measured_s: float) -> list:
    for i, s in enumerate(scripts):
        if i < len(spec.scripts):
            s.weight = spec.scripts[i].weight
        if s.tps is None and measured_s > 0:
            s.tps = s.transactions / measured_s
    return scripts


def attach_samples(
    rec: RunRecord, series_raw: dict[str, dict[str, list]], window_start_s: float | None
) -> None:
    """Sampler rows carry epoch seconds; re-base them on the measured window's start."""
    from pgrig.metrics.sampler import window_summary

    origin = window_start_s if window_start_s is not None else sample_origin(rec)
    if origin is None:
        return
    figures = window_summary(series_raw, origin, origin + (rec.measured_s or 0.0) + 0.5)
    for field in ("cpu_user", "cpu_system", "cpu_iowait", "cpu_idle", "hit_ratio"):
        setattr(rec, field, figures.get(field))
    if (steal := figures.get("cpu_steal")) is not None:  # only where the kernel counts it
        rec.extra["cpu_steal"] = steal
    _attach_cpu_share(rec, series_raw.get("os", {}), origin)
    for kind, cols in series_raw.items():
        kept = rebased(cols, origin)
        if kept is not None:
            rec.series[kind] = kept


def _attach_cpu_share(rec: RunRecord, os_cols: dict[str, list], origin: float) -> None:
    """CPU per process group over the window (extra["cpu_share"]) and the busy-host warning."""
    from pgrig.metrics.cpu_share import BUSY_HOST, busy_host_warning, cpu_share

    window_end = origin + (rec.measured_s or 0.0) + 0.5
    share = cpu_share(os_cols, origin, window_end, os.cpu_count())  # this host: it just ran
    if share:
        rec.extra["cpu_share"] = share
    message = busy_host_warning(share)
    if message:
        rec.add_warning(BUSY_HOST, message)
