"""pgbench behind the driver seam (load/engines/driver.py).

The warm-up is excluded by time: pgbench runs for lead-in + window whole seconds; a reader
thread folds the per-transaction log as pgbench writes it (load/engines/txlog_follower.py,
analysis/txlog.py), and only transactions that END inside the window count towards TPS,
latency and per-script figures. Where the window lies on pgbench's clock: analysis/window.py.
pgbench's own -P 1 progress lines (stderr) feed the live TPS and stand in for the series when
no log could be read.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgrig.analysis import hdr, quantile_bounds
from pgrig.analysis.txlog import TxlogStream
from pgrig.analysis.window import WindowPlan
from pgrig.errors import PgrigError
from pgrig.load.engines import command as pgbench_command
from pgrig.load.engines import pgbench_output, results
from pgrig.load.engines.driver import Stream
from pgrig.load.engines.process import die_with_parent
from pgrig.load.engines.txlog_follower import TxlogFollower
from pgrig.load.engines.txlog_mode import TxlogChoice
from pgrig.record.run import SeriesColumns

HDR_RESOLUTION = (
    f"latencies in microseconds, bucketed within {hdr.RELATIVE_ERROR:.3%} (analysis/hdr.py)"
)

if TYPE_CHECKING:
    from rich.console import Console

    from pgrig.archive.records import RunRecord
    from pgrig.provision.state.environment import Environment
    from pgrig.request import RunRequest


class PgbenchDriver:
    engine = "pgbench"
    progress_on: Stream = "stderr"

    def __init__(
        self,
        spec: RunRequest,
        env: Environment,
        work: Path,
        client_env: dict[str, str],
        prefix: list[str],
        choice: TxlogChoice | None = None,
    ) -> None:
        self.spec = spec
        self.choice = choice or TxlogChoice("full", None, None, "requested")
        self.txlog_mode: str | None = self.choice.mode
        self.pgbench = env.binary("pgbench")
        self.client_env = client_env
        self.prefix = prefix  # taskset for --client-cpus
        self.plan = WindowPlan.for_run(spec.warmup_s, spec.duration_s)
        self.lead_in_s = self.plan.lead_in_s
        self.total_s = self.plan.pgbench_seconds  # lead-in + window (analysis/window.py)
        self.work = work
        self.log_prefix = work / "txlog"
        self.points: list[Any] = []
        self.stream = TxlogStream(
            origin_us=0,  # set at launch (start)
            plan=self.plan,
            has_lag=spec.rate is not None,
            has_retries=spec.max_tries != 1,
            script_names=[s.name for s in spec.scripts],
            expected_sources=spec.threads,
        )
        self.follower: TxlogFollower | None = None

    def version(self) -> str:
        found = pgbench_command.pgbench_version(self.pgbench)  # cached
        if found is None:
            raise PgrigError(f"cannot run pgbench ({self.pgbench})")
        return found

    def before_launch(self, console: Console) -> None:
        """With --transactions, the warm-up is its own timed pgbench run, never measured."""
        spec = self.spec
        if self.total_s is not None or spec.warmup_s <= 0:
            return
        warm = spec.model_copy(
            update={"transactions_per_client": None, "duration_s": spec.warmup_s}
        )
        argv = pgbench_command.build_pgbench_command(  # empty log prefix: no per-transaction log
            self.pgbench, warm, log_prefix="", total_seconds=spec.warmup_s, progress=False
        )
        console.print(f"warm-up: {spec.warmup_s:g}s (not measured)")
        subprocess.run(
            self.prefix + argv,
            env=self.client_env,
            capture_output=True,
            check=False,
            preexec_fn=die_with_parent,  # never outlives a killed pgrig (load/engines/process.py)
        )

    def command(self) -> list[str]:
        return pgbench_command.build_pgbench_command(
            self.pgbench,
            self.spec,
            log_prefix=str(self.log_prefix),
            total_seconds=self.total_s,
            progress=True,
            target_host=self.client_env.get("PGHOST"),
        )

    def start(self, origin_us: int, art_dir: Path) -> None:
        # The grid of whole seconds starts here, before pgbench's -T clock (analysis/window.py).
        self.stream.set_origin(origin_us)
        keep_dir = art_dir if self.spec.keep_txlog else None
        self.follower = TxlogFollower(self.log_prefix, self.stream, keep_dir)
        self.follower.start()

    def on_line(self, line: str) -> None:
        point = pgbench_output.parse_progress_line(line)
        if point is not None:
            self.points.append(point)

    def other_pids(self) -> list[int]:
        return []

    def live(self) -> tuple[float | None, float | None]:
        tps = self.points[-1].tps if self.points else None
        return tps, self.stream.live()[1]  # p95 of the latest second the log reader closed

    def stop(self) -> None:
        self.follow = self.follower.stop() if self.follower is not None else None

    def partial_series(self, warmup_s: float) -> SeriesColumns:
        return results.progress_series(list(self.points), warmup_s)

    def fill(
        self,
        rec: RunRecord,
        completed: bool,
        stdout: str,
        stderr: str,
        series_raw: dict[str, dict[str, list]],
    ) -> None:
        follow = getattr(self, "follow", None)
        if follow is not None:
            rec.extra["txlog"] = {
                **follow.as_dict(),
                "lines": self.stream.lines,
                "late_lines": self.stream.late_lines,
            }
            rec.artifacts.update(follow.kept)
            if follow.error:
                rec.extra["results_error"] = follow.error
        try:
            usable = follow is not None and not follow.error
            txlog = self.stream.finish(completed) if usable else None
            results.fill_results(
                rec, self.spec, completed, txlog, stdout, stderr, self.points, series_raw
            )
            rec.extra["txlog_mode"] = self.choice.as_dict()
            if txlog is not None:
                rec.extra["latency_basis"] = quantile_bounds.basis(
                    "pgbench per-transaction log (every transaction)",
                    samples=int(txlog.histogram.sum()),
                    population=txlog.transactions,
                    bounds=quantile_bounds.hdr_bounds(txlog.histogram),
                    resolution=HDR_RESOLUTION,
                )
        except Exception as e:  # a broken log must not lose the run: keep what we have
            rec.extra["results_error"] = f"{type(e).__name__}: {e}"

    def cross_check(self, rec: RunRecord, stdout: str, stderr: str) -> str | None:
        # pgbench's own summary must agree with what the log gave (load/engines/crosscheck.py)
        return results.cross_check(rec, stdout, stderr, self.points, self.work)

    def output_error(self) -> tuple[str, str] | None:
        follow = getattr(self, "follow", None)
        if follow is not None and follow.error:
            return "the per-transaction log", follow.error
        return None

    def failure(self, stdout: str, stderr: str, rc: int) -> str:
        from pgrig.load.engines.process import failure_reason

        return failure_reason(rc, pgbench_output.error_lines(stderr), stderr, "pgbench")
