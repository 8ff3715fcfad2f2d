"""The seam between the run orchestrator and a load engine (pgbench, sysbench, TPC-H).

The runner (load/core/runner.py) owns everything a run does whatever drives the load: the lock,
settings, CHECKPOINT, the archive row, samplers, insights, pinning, the lease, the process's
life and its interruption, and the final status. A driver owns what only its engine knows:
its command line, where its per-second reports arrive and how to read them, what it shows live,
and how its output becomes the record's figures (window, TPS, latency, series, scripts).

Adding an engine means one module implementing LoadDriver and one line in
load/engines/engine_choice.py's `for_request` (this module imports no engine: they import it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from rich.console import Console

    from pgrig.archive.records import RunRecord
    from pgrig.record.run import SeriesColumns

Stream = Literal["stdout", "stderr"]


class LoadDriver(Protocol):
    # "pgbench" (chbench's transactions too) | "sysbench" | "tpch": recorded with the run
    # (extra["load_engine"])
    engine: str
    progress_on: Stream  # where the engine prints its per-second reports
    lead_in_s: int  # seconds before the measured window (warm-up and start-up)
    total_s: int | None  # the whole run's seconds (None: bounded by transactions)
    client_env: dict[str, str]  # the process environment: libpq variables of the target
    txlog_mode: str | None  # full | sampled | off (pgbench's log); None: not pgbench

    def version(self) -> str:
        """The engine's version; raises PgrigError when the binary cannot run."""
        ...

    def before_launch(self, console: Console) -> None:
        """Anything that must run before the measured process (e.g. a separate warm-up)."""
        ...

    def command(self) -> list[str]:
        """The engine's argv (no connection parameters: those are in the environment)."""
        ...

    def start(self, origin_us: int, art_dir: Path) -> None:
        """Called just before launch, with pgrig's clock reading that anchors the grid and
        the run's artifacts directory."""
        ...

    def on_line(self, line: str) -> None:
        """One line of the progress stream (called from the reader thread)."""
        ...

    def other_pids(self) -> list[int]:
        """The load's processes beside the engine's own, started by start() (CH-benCHmark's
        analytic streams): counted as the benchmark's client, never as neighbours."""
        ...

    def live(self) -> tuple[float | None, float | None]:
        """(TPS, p95 ms) of the latest whole second, for the live view and guardrails."""
        ...

    def stop(self) -> None:
        """After the process ended: read what is left (log files, ...)."""
        ...

    def partial_series(self, warmup_s: float) -> SeriesColumns:
        """The per-second series gathered so far (a lost run keeps it)."""
        ...

    def fill(
        self,
        rec: RunRecord,
        completed: bool,
        stdout: str,
        stderr: str,
        series_raw: dict[str, dict[str, list]],
    ) -> None:
        """The record's figures from what the run left (never raises for a bad output: the
        runner keeps the run and records the error)."""
        ...

    def cross_check(self, rec: RunRecord, stdout: str, stderr: str) -> str | None:
        """Why the engine's own summary disagrees with the record's figures (None: agrees)."""
        ...

    def output_error(self) -> tuple[str, str] | None:
        """(what, error) when an output of the engine could not be read (e.g. a full disk)."""
        ...

    def failure(self, stdout: str, stderr: str, rc: int) -> str:
        """Why a run that exited non-zero failed, in the engine's own words."""
        ...
