"""Turning what a run left behind into RunRecord figures.

The per-transaction log gives the measured window, TPS, failures, latency percentiles and
per-script figures; the samplers' rows are re-based on the window's start; TPC-C runs get NOPM
and TPM from their per-type figures. Nothing here talks to a server or to the archive.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, cast

from pgrig.archive.records import RunRecord, ScriptResult
from pgrig.load import pgbench_output
from pgrig.request import RunRequest


def fill_results(
    rec: RunRecord,
    spec: RunRequest,
    completed: bool,
    log_prefix: Path,
    stdout: str,
    stderr: str,
    progress_points: list[Any],
    series_raw: dict[str, dict[str, list]],
) -> None:
    from pgrig.analysis import txlog

    summary = pgbench_output.parse_summary(stdout, stderr) if stdout.strip() else None
    logs = sorted(log_prefix.parent.glob(log_prefix.name + ".*"))
    script_names = [s.name for s in spec.scripts]
    window_start_s: float | None = None
    if logs:
        df = txlog.read_txlogs(logs, has_lag=spec.rate is not None, has_retries=spec.max_tries != 1)
        if df.height:
            start_us = txlog.infer_start_us(df)
            last_end_us = int(cast(int, df["end_us"].max()))  # an Int64 column's max
            if spec.duration_s is not None:
                w0 = start_us + int(spec.warmup_s * 1e6)
                w1 = w0 + int(spec.duration_s * 1e6)
                # pgbench's -T clock starts before it connects, so slow logins (1,000 clients)
                # eat into the run: the warm-up counts from pgbench's launch and absorbs them,
                # and the window never reaches past pgbench's own end.
                launched = rec.extra.get("pgbench_launched_at")
                if launched:
                    launch_us = int(launched * 1e6)
                    w0 = max(start_us, launch_us + int(spec.warmup_s * 1e6))
                    total = math.ceil(spec.warmup_s + spec.duration_s)
                    w1 = max(w0, min(w0 + int(spec.duration_s * 1e6), launch_us + total * 10**6))
            else:
                w0, w1 = start_us, last_end_us + 1
            # A run that completed measured its whole window; a cut-short one up to its last end.
            measured_end = w1 if completed else min(w1, last_end_us + 1)
            res = txlog.summarize(
                df, window_start_us=w0, window_end_us=w1, script_names=script_names
            )
            window_start_s = w0 / 1e6
            rec.measured_s = max(0.0, (measured_end - w0) / 1e6)
            rec.transactions = res.transactions
            rec.failed = res.failed
            rec.retried = res.retried
            rec.skipped = res.skipped
            rec.tps = res.transactions / rec.measured_s if rec.measured_s > 0 else None
            rec.latency = res.latency
            rec.scripts = script_results(res.scripts, spec, rec.measured_s)
            rec.series["pgbench"] = res.series
    if window_start_s is None and progress_points:
        # No usable log (killed before flushing): keep pgbench's own per-second progress.
        rec.series["pgbench"] = {
            "t": [p.elapsed_s - spec.warmup_s for p in progress_points],
            "tps": [p.tps for p in progress_points],
            "lat_avg": [p.latency_ms for p in progress_points],
        }
        window_start_s = None
    if summary is not None:
        rec.extra["pgbench_summary"] = summary.as_dict() if hasattr(summary, "as_dict") else None
    attach_samples(rec, series_raw, window_start_s)
    if rec.workload == "tpcc" and rec.scripts and rec.measured_s:
        from pgrig.workloads import tpcc

        figures = tpcc.summarize(rec.scripts, rec.measured_s)
        rec.nopm = figures.get("nopm")
        rec.tpm = figures.get("tpm")
        rec.rollbacks = figures.get("rollbacks")
        rec.extra["tpcc"] = figures


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

    origin = window_start_s
    if origin is None and rec.started_at is not None:
        origin = rec.started_at.timestamp() + rec.warmup_s
    if origin is None:
        return
    figures = window_summary(series_raw, origin, origin + (rec.measured_s or 0.0) + 0.5)
    for field in ("cpu_user", "cpu_system", "cpu_iowait", "cpu_idle", "hit_ratio"):
        setattr(rec, field, figures.get(field))
    _attach_cpu_share(rec, series_raw.get("os", {}), origin)
    for kind, cols in series_raw.items():
        cols = dict(cols)
        ts = cols.pop("ts", None)
        if ts is None:
            continue
        rec.series[kind] = {"t": [round(x - origin, 3) for x in ts], **cols}


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
