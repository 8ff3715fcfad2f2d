"""sysbench behind the driver seam (load/engines/driver.py).

sysbench runs `--time = lead-in + window` whole seconds (the same lead-in as pgbench: the
warm-up rounded up, at least 1 s, analysis/window.py) with `--report-checkpoints=LEAD_IN`, so
its final statistics and its latency histogram cover the measured window only
(load/engines/sysbench_output.py). What differs from pgbench's window, and why:

- sysbench keeps no per-transaction log, so the window cannot be cut on pgrig's grid: it is
  sysbench's own, from its checkpoint (LEAD_IN s after its threads started, on its clock) to
  the end of the run, including the transactions in flight at --time (pgbench's window drops
  those). TPS is sysbench's own figure over that interval, and measured_s = transactions / TPS.
- Slow logins: sysbench's clock starts once its threads have connected, so a slow start-up
  delays the window instead of shortening it (no late_start warning is needed).
- Latency percentiles come from sysbench's histogram (1,024 log buckets, each value within
  0.90% of its bucket's printed centre), over every transaction of the window: they rest on
  that many samples and carry distribution-free order-statistic bounds. avg and max are
  sysbench's own. The per-second series has sysbench's per-second TPS, QPS, p95 and errors.
- Errors sysbench ignores (deadlocks, serialization failures, unique violations: it rolls back
  and runs the event again) are recorded as retried; any other error stops sysbench (failed).
- The window start on pgrig's clock (for the host and server samplers) is read when the
  "Threads started!" line arrives, plus the lead-in.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from pgrig.analysis import quantile_bounds
from pgrig.archive.records import LatencyStats, ScriptResult
from pgrig.load.engines import results, sysbench_output
from pgrig.load.engines.driver import Stream
from pgrig.provision.state.environment import DEFAULT_DATABASE
from pgrig.record.documents import DatasetDoc, LatencyBasisDoc, PercentileCheck
from pgrig.record.run import SeriesColumns
from pgrig.request.values import number_text
from pgrig.workloads import sysbench, sysbench_dataset, sysbench_lua

if TYPE_CHECKING:
    from rich.console import Console

    from pgrig.archive.records import RunRecord
    from pgrig.request import RunRequest

PERCENTILE = 95  # --percentile: the per-second series' latency column


class SysbenchDriver:
    engine = "sysbench"
    progress_on: Stream = "stdout"
    txlog_mode: str | None = None  # sysbench keeps no per-transaction log

    def __init__(self, spec: RunRequest, client_env: dict[str, str], dataset: DatasetDoc) -> None:
        self.spec = spec
        self.sysbench = sysbench.binary()
        self.name, self.script = sysbench.script_path(spec.workload)
        # the script's directory on the Lua path: it may require modules beside it
        self.client_env = sysbench_lua.process_env(self.script, client_env)
        planned = sysbench_dataset.run_options(
            self.sysbench, self.name, self.script, spec.defines, dataset or None,
            (spec.env_name, spec.database or DEFAULT_DATABASE),
        )  # fmt: skip
        self.options = planned.options
        self.warnings = planned.warnings
        from pgrig.analysis.window import WindowPlan

        plan = WindowPlan.for_run(spec.warmup_s, spec.duration_s)
        self.lead_in_s = plan.lead_in_s
        self.total_s = plan.pgbench_seconds
        self.intervals: list[sysbench_output.IntervalReport] = []
        self.threads_started_at: float | None = None  # epoch s, when "Threads started!" came

    def version(self) -> str:
        found = sysbench.version(self.sysbench)
        if found is None:
            from pgrig.errors import PgrigError

            raise PgrigError(f"cannot run sysbench ({self.sysbench})")
        return found

    def before_launch(self, console: Console) -> None:
        return None

    def command(self) -> list[str]:
        return self.command_for(self.sysbench, str(self.script), self.spec.clients, self.spec.rate)

    def command_for(self, binary: str, script: str, clients: int, rate: float | None) -> list[str]:
        """The command of one sysbench process: this machine's, or a load host's (its own
        sysbench, the script where the agent put it, its share of clients and rate)."""
        spec = self.spec
        argv = [
            binary,
            script,
            *sysbench.DRIVER_ARGS,
            f"--threads={clients}",
            f"--time={self.total_s}",
            "--report-interval=1",
            f"--report-checkpoints={self.lead_in_s}",
            "--histogram=on",
            f"--percentile={PERCENTILE}",
            # prepared: server-side prepared statements; simple: sysbench's client-side emulation
            f"--db-ps-mode={'auto' if spec.protocol == 'prepared' else 'disable'}",
        ]
        if rate is not None:
            argv.append(f"--rate={number_text(rate)}")
        return [*argv, *self.options, "run"]

    def start(self, origin_us: int, art_dir: Path) -> None:
        self.origin_s = origin_us / 1e6

    def on_line(self, line: str) -> None:
        if self.threads_started_at is None and line.startswith("Threads started!"):
            self.threads_started_at = time.time()
            return
        report = sysbench_output.parse_interval(line)
        if report is not None:
            self.intervals.append(report)

    def other_pids(self) -> list[int]:
        return []

    def live(self) -> tuple[float | None, float | None]:
        if not self.intervals:
            return None, None
        last = self.intervals[-1]
        return last.tps, last.lat_pct

    def stop(self) -> None:
        return None

    def partial_series(self, warmup_s: float) -> SeriesColumns:
        return _series(list(self.intervals), self.lead_in_s)

    def fill(
        self,
        rec: RunRecord,
        completed: bool,
        stdout: str,
        stderr: str,
        series_raw: dict[str, dict[str, list]],
    ) -> None:
        self.fill_output(rec, sysbench_output.parse(stdout), series_raw, self.threads_started_at)

    def fill_output(
        self,
        rec: RunRecord,
        out: sysbench_output.Output,
        series_raw: dict[str, dict[str, list]],
        threads_started_at: float | None,
    ) -> None:
        """The run's figures from what sysbench printed (one process's, or the merge of the
        load hosts': sysbench_output.merge); threads_started_at: epoch s of "Threads started!"
        (the first host's)."""
        for code, message in self.warnings:
            rec.add_warning(code, message)
        rec.extra["load_engine"] = {"name": "sysbench", "version": sysbench.version(self.sysbench)}
        series = _series(out.intervals, self.lead_in_s)
        if series["t"]:
            rec.series["pgbench"] = series  # the load's series: one kind whatever the engine
        start = threads_started_at or getattr(self, "origin_s", None)
        window_start = start + self.lead_in_s if start is not None else None
        if out.checkpoint is not None:
            rec.extra["sysbench_checkpoint"] = out.checkpoint.as_dict()
        origin = getattr(self, "origin_s", None)
        rec.extra["window"] = {  # sysbench's own window (see the module doc), for audits
            "source": f"sysbench --report-checkpoints={self.lead_in_s}",
            "lead_in_s": self.lead_in_s,
            "threads_started_after_s": (
                round(threads_started_at - origin, 3)
                if threads_started_at is not None and origin is not None
                else None
            ),
        }
        final = out.final if out.checkpoint is not None else None
        if final is not None and final.transactions is not None:
            rec.extra["sysbench_summary"] = final.as_dict()
            _window_figures(rec, final, out.histogram, self.name, out.parts)
            whole = [(t, v) for t, v in zip(series["t"], series["tps"], strict=True) if t >= 0]
            if whole:
                ts, tps = zip(*whole, strict=True)
                rec.extra["stability"] = results.stability_record(list(ts), list(tps))
        results.attach_samples(rec, series_raw, window_start)

    def cross_check(self, rec: RunRecord, stdout: str, stderr: str) -> str | None:
        """The figures are sysbench's own; what can disagree is its percentile against the
        one read from its histogram (then the histogram was not the window's)."""
        check = rec.extra.get("latency_basis", {}).get("check")
        if check and not check.get("agrees"):
            return (
                f"sysbench's own p{check.get('percentile'):g} ({check.get('sysbench_ms')} ms) "
                f"differs from its histogram's ({check.get('from_histogram_ms')} ms)"
            )
        return None

    def output_error(self) -> tuple[str, str] | None:
        return None

    def failure(self, stdout: str, stderr: str, rc: int) -> str:
        from pgrig.load.engines.process import failure_reason

        errs = sysbench_output.error_lines(stdout, stderr)
        return failure_reason(rc, errs, "", "sysbench")


def _series(intervals: list[sysbench_output.IntervalReport], lead_in_s: int) -> dict[str, list]:
    """sysbench's per-second reports: the second ending at elapsed e starts at e - 1; t is
    relative to the window start (negative in the lead-in), as for pgbench."""
    return {
        "t": [r.elapsed_s - 1 - lead_in_s for r in intervals],
        "tps": [r.tps for r in intervals],
        "qps": [r.qps for r in intervals],
        "p95": [r.lat_pct if r.lat_pct else None for r in intervals],
        "errors": [r.errors_per_s for r in intervals],
    }


def _window_figures(
    rec: RunRecord,
    final: sysbench_output.Statistics,
    histogram: list[tuple[float, int]],
    name: str,
    parts: dict[str, sysbench_output.Output] | None = None,
) -> None:
    transactions = final.transactions or 0
    rec.transactions = transactions
    rec.tps = final.tps
    rec.measured_s = round(transactions / final.tps, 3) if final.tps else None
    rec.failed = 0
    rec.retried = final.ignored_errors or 0
    rec.skipped = 0
    rec.latency = _latency(final, histogram)
    rec.extra["latency_basis"] = latency_basis(histogram, final, parts)
    rec.scripts = [
        ScriptResult(
            script_no=0,
            name=name,
            weight=1,
            transactions=transactions,
            retried=rec.retried,
            tps=rec.tps,
            latency=rec.latency,
        )
    ]


def _latency(final: sysbench_output.Statistics, hist: list[tuple[float, int]]) -> LatencyStats:
    pct = {k: sysbench_output.percentile(hist, q) for k, q in quantile_bounds.QUANTILES.items()}
    return LatencyStats(
        avg=final.lat_avg_ms,
        stddev=None,  # sysbench gives none; the histogram's would only be approximate
        max=final.lat_max_ms,
        **pct,
    )


def latency_basis(
    histogram: list[tuple[float, int]],
    final: sysbench_output.Statistics,
    parts: dict[str, sysbench_output.Output] | None = None,
) -> LatencyBasisDoc:
    """What the percentiles rest on: every transaction of the window, bucketed by sysbench.
    parts: the load hosts' own outputs of a merged run; each host's own percentile is checked
    against its own histogram (a percentile of the merge has no sysbench figure to agree
    with)."""
    n = sum(c for _v, c in histogram)
    bounds: dict[str, list[float | None]] = {}
    for key, q in quantile_bounds.QUANTILES.items():
        ranks = quantile_bounds.rank_bounds(n, q)
        lo = sysbench_output.value_at_rank(histogram, ranks.lower) if ranks.lower else None
        hi = sysbench_output.value_at_rank(histogram, ranks.upper) if ranks.upper else None
        bounds[key] = [lo, hi]
    own = final.lat_pct_ms
    ours = sysbench_output.percentile(histogram, (final.lat_pct or PERCENTILE) / 100)
    check: PercentileCheck = {  # sysbench's own percentile against its histogram's
        "percentile": final.lat_pct,
        "sysbench_ms": own,
        "from_histogram_ms": ours,
        # sysbench prints its percentile to 0.01 ms, the histogram to 0.001 ms
        "agrees": own is not None and ours is not None and abs(own - ours) <= 0.006,
    }
    if parts:
        hosts = {
            name: latency_basis(p.histogram, p.final)["check"]
            for name, p in parts.items()
            if p.final is not None
        }
        check = {
            "percentile": final.lat_pct,
            "sysbench_ms": None,
            "from_histogram_ms": ours,
            "agrees": bool(hosts) and all(c.get("agrees") for c in hosts.values()),
            "hosts": hosts,
        }
    return {
        "source": "sysbench --histogram",
        "samples": n,
        "population": final.transactions,
        "sampled": False,
        "rests_on": quantile_bounds.describe_every(n, final.transactions),
        "resolution": (
            "1,024 log buckets from 0.001 ms to 100 s; each percentile is a bucket centre, "
            f"within {sysbench_output.BUCKET_HALF_WIDTH:.2%} of the true order statistic"
        ),
        "bounds": bounds,
        "confidence": 1 - quantile_bounds.MISRATE,
        "check": check,
    }
