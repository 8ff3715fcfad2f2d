"""pgbench with a sampled per-transaction log (--sampling-rate) or none (`--txlog sampled|off`,
load/engines/txlog_mode.py), behind the driver seam (load/engines/driver.py).

Counts must stay exact, and a sample cannot give them: the measured window is one pgbench
process of its own, and TPS, transactions, failures, retries, mean and stddev latency are
pgbench's own summary of it, as raw pgbench prints them. The warm-up is a separate pgbench
process before it, without a log (as for a --transactions run). What differs from the full
mode's window (analysis/window.py):

- the window is pgbench's -T (or -t) of the measured process: its clients connect at its start,
  and pgbench's TPS excludes that initial connection time; measured_s = transactions / TPS;
- the per-second series is pgbench's -P 1 progress (t = the end of each second of pgbench's
  clock, as progress_series gives it), mean latency per second; no lead-in is shown;
- sampled: p50..p99.9 come from the sample (each transaction logged with probability
  --sampling-rate, independently), with how many samples they rest on and distribution-free
  order-statistic bounds; max is the sample's (a lower bound of the true max), kept apart;
- off: percentiles are unavailable, and the record says so;
- a pgbench interrupted before its summary keeps the figures its -P lines give
  (load/engines/progress_totals.py), marked as such.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgrig.analysis import quantile_bounds
from pgrig.analysis.txlog import TxlogStream
from pgrig.analysis.window import WindowPlan
from pgrig.archive.records import LatencyStats, ScriptResult
from pgrig.load.engines import command as pgbench_command
from pgrig.load.engines import pgbench_output, progress_totals, results
from pgrig.load.engines.pgbench_driver import HDR_RESOLUTION, PgbenchDriver
from pgrig.load.engines.txlog_follower import TxlogFollower
from pgrig.load.engines.txlog_mode import TxlogChoice
from pgrig.record.run import SeriesColumns

if TYPE_CHECKING:
    from pgrig.archive.records import RunRecord
    from pgrig.provision.state.environment import Environment
    from pgrig.request import RunRequest


class PgbenchSummaryDriver(PgbenchDriver):
    def __init__(
        self,
        spec: RunRequest,
        env: Environment,
        work: Path,
        client_env: dict[str, str],
        prefix: list[str],
        choice: TxlogChoice,
    ) -> None:
        super().__init__(spec, env, work, client_env, prefix, choice)
        self.lead_in_s = 0  # the warm-up is its own process (before_launch)
        self.total_s = math.ceil(spec.duration_s) if spec.duration_s is not None else None
        self.stream = TxlogStream(
            origin_us=0,
            plan=WindowPlan(lead_in_s=0, measured_s=None),  # every logged line counts
            has_lag=spec.rate is not None,
            has_retries=spec.max_tries != 1,
            script_names=[s.name for s in spec.scripts],
            expected_sources=spec.threads,
        )

    def before_launch(self, console: Any) -> None:
        spec = self.spec
        if spec.warmup_s <= 0:
            return
        self.total_s, saved = None, self.total_s  # the parent's rule: a separate warm-up
        try:
            super().before_launch(console)
        finally:
            self.total_s = saved

    def command(self) -> list[str]:
        sampled = self.choice.mode == "sampled"
        return pgbench_command.build_pgbench_command(
            self.pgbench,
            self.spec,
            log_prefix=str(self.log_prefix) if sampled else "",
            total_seconds=self.total_s,
            progress=True,
            sampling_rate=self.choice.sampling_rate if sampled else None,
            target_host=self.client_env.get("PGHOST"),
        )

    def start(self, origin_us: int, art_dir: Path) -> None:
        self.origin_s = origin_us / 1e6
        if self.choice.mode == "sampled":
            self.stream.set_origin(origin_us)
            self.follower = TxlogFollower(self.log_prefix, self.stream, None)
            self.follower.start()

    def live(self) -> tuple[float | None, float | None]:
        tps = self.points[-1].tps if self.points else None
        p95 = self.stream.live()[1] if self.choice.mode == "sampled" else None
        return tps, p95

    def partial_series(self, warmup_s: float) -> SeriesColumns:
        return results.progress_series(list(self.points), 0.0)

    def fill(
        self,
        rec: RunRecord,
        completed: bool,
        stdout: str,
        stderr: str,
        series_raw: dict[str, dict[str, list]],
    ) -> None:
        rec.extra["txlog_mode"] = self.choice.as_dict()
        summary = pgbench_output.parse_summary(stdout, stderr) if stdout.strip() else None
        if summary is not None:
            rec.extra["pgbench_summary"] = summary.as_dict()
        if self.points:
            rec.series["pgbench"] = results.progress_series(self.points, 0.0)
            t, tps = rec.series["pgbench"]["t"], rec.series["pgbench"]["tps"]
            whole = [
                (float(a), float(b))
                for a, b in zip(t, tps, strict=True)
                if a is not None and b is not None
            ]
            if whole:
                rec.extra["stability"] = results.stability_record(
                    [a for a, _ in whole], [b for _, b in whole]
                )
        sample = None
        follow = getattr(self, "follow", None)
        if follow is not None:
            rec.extra["txlog"] = {**follow.as_dict(), "lines": self.stream.lines}
            if not follow.error:
                sample = self.stream.finish(completed)
        if summary is not None and summary.complete and summary.processed is not None:
            _summary_figures(rec, summary, self.spec)
            _sample_percentiles(rec, sample, summary.processed, self.choice)
        elif (derived := progress_totals.totals(self.points)) is not None:
            _progress_figures(rec, derived)  # interrupted: no summary printed
            _sample_percentiles(rec, sample, derived.transactions, self.choice)
        results.attach_samples(rec, series_raw, getattr(self, "origin_s", None))

    def cross_check(self, rec: RunRecord, stdout: str, stderr: str) -> str | None:
        """The figures are pgbench's own summary; the sample is checked against the rate:
        its size is Binomial(processed, rate), so a sample far outside 6 standard deviations
        means lines were lost (then the percentiles would not be a fair sample)."""
        basis = rec.extra.get("latency_basis") or {}
        n, total, rate = basis.get("samples"), basis.get("population"), self.choice.sampling_rate
        if self.choice.mode != "sampled" or not n or not total or not rate:
            return None
        sd = math.sqrt(total * rate * (1 - rate))
        if abs(n - total * rate) > 6 * sd + 1 + 2 * self.spec.clients:
            return (
                f"the sampled log has {n:,} transactions, pgbench's summary {total:,} at "
                f"--sampling-rate {rate:g}: lines were lost"
            )
        return None


def _summary_figures(rec: RunRecord, s: pgbench_output.PgbenchSummary, spec: RunRequest) -> None:
    rec.transactions = s.processed
    rec.tps = s.tps
    rec.measured_s = round(s.processed / s.tps, 3) if s.processed and s.tps else None
    rec.failed = s.failed if s.failed is not None else 0
    rec.retried = s.retried
    rec.skipped = s.skipped if s.skipped is not None else 0
    rec.latency = LatencyStats(avg=s.latency_avg_ms, stddev=s.latency_stddev_ms)
    scripts = []
    for i, part in enumerate(s.scripts):
        name = spec.scripts[i].name if i < len(spec.scripts) else part.name
        scripts.append(
            ScriptResult(
                script_no=part.number - 1,
                name=name,
                weight=spec.scripts[i].weight if i < len(spec.scripts) else 1,
                transactions=part.transactions or 0,
                failed=part.failed or 0,
                retried=part.retried or 0,
                skipped=part.skipped or 0,
                tps=part.tps,
                latency=LatencyStats(avg=part.latency_avg_ms, stddev=part.latency_stddev_ms),
            )
        )
    if not scripts and spec.scripts:  # one script: pgbench prints no per-script section
        scripts.append(
            ScriptResult(
                script_no=0,
                name=spec.scripts[0].name,
                weight=spec.scripts[0].weight,
                transactions=s.processed or 0,
                failed=rec.failed or 0,
                retried=rec.retried or 0,
                skipped=rec.skipped or 0,
                tps=s.tps,
                latency=LatencyStats(avg=s.latency_avg_ms, stddev=s.latency_stddev_ms),
            )
        )
    rec.scripts = scripts


def _progress_figures(rec: RunRecord, t: progress_totals.ProgressTotals) -> None:
    """The figures of a pgbench that printed no summary (engines/progress_totals.py), marked so."""
    rec.transactions = t.transactions
    rec.tps = t.tps
    rec.measured_s = round(t.window_s, 3)
    rec.failed = t.failed if t.failed is not None else 0
    rec.retried = t.retried
    rec.skipped = t.skipped if t.skipped is not None else 0
    rec.latency = LatencyStats(avg=t.latency_avg_ms, stddev=t.latency_stddev_ms)
    rec.scripts = []  # progress lines are not per script
    rec.extra["figures_from"] = t.as_dict()
    rec.add_warning(
        "figures_from_progress",
        f"pgbench printed no summary: transactions, TPS and mean latency are derived from its "
        f"{t.lines} progress lines ({t.window_s:g} s; what ran after the last line is left out)",
    )


def _sample_percentiles(rec: RunRecord, sample: Any, processed: int, choice: TxlogChoice) -> None:
    if choice.mode != "sampled" or sample is None:
        rec.extra["latency_basis"] = {
            "source": "none",
            "samples": 0,
            "population": processed,
            "rests_on": "percentiles unavailable: --txlog off keeps no per-transaction log "
            "(mean and stddev are pgbench's own)",
        }
        return
    lat = sample.latency
    for key in quantile_bounds.QUANTILES:
        setattr(rec.latency, key, getattr(lat, key))
    by_no = {s.script_no: s for s in sample.scripts}
    for script in rec.scripts:
        got = by_no.get(script.script_no)
        if got is not None:
            for key in quantile_bounds.QUANTILES:
                setattr(script.latency, key, getattr(got.latency, key))
    rec.extra["latency_basis"] = {
        **quantile_bounds.basis(
            f"pgbench --sampling-rate {choice.sampling_rate:g}",
            samples=int(sample.histogram.sum()),
            population=processed,
            bounds=quantile_bounds.hdr_bounds(sample.histogram),
            resolution=HDR_RESOLUTION,
        ),
        "sample_max_ms": lat.max,  # the sample's max: a lower bound of the run's
    }
