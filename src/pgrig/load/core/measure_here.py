"""The load on this machine over the run's window, inside the run's scaffold (every sampler
around it: load/core/run_scaffold.py), and how it ended."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pgrig.archive.records import RunRecord, RunStatus
from pgrig.load.core import left_backends, run_steps
from pgrig.load.core.live import LiveView
from pgrig.load.core.run_context import RunContext
from pgrig.load.core.run_scaffold import RunScaffold
from pgrig.load.core.run_steps import StopIf
from pgrig.load.engines import command as pgbench_command
from pgrig.load.engines.process import PgbenchProcess
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import NetworkDoc
from pgrig.request import RunRequest

if TYPE_CHECKING:
    from pgrig.load.engines.driver import LoadDriver


# The warm-up is excluded by time: pgbench runs for lead-in + window whole seconds in ONE
# process; a reader thread folds the per-transaction log as pgbench writes it
# (load/engines/txlog_follower.py, analysis/txlog.py), and only transactions that END inside the
# window count towards TPS, latency and per-script figures. Where the window lies on pgbench's
# clock: analysis/window.py. Series keep the lead-in (negative t) so charts can shade it.
def measure(ctx: RunContext, driver: LoadDriver) -> RunRecord:
    """pgbench (or sysbench) here, over the run's window, inside the run's scaffold
    (load/core/run_scaffold.py: every sampler around it)."""
    rec = ctx.rec
    driver.before_launch(ctx.console)  # e.g. pgbench's separate warm-up of a -t run
    argv = run_steps.client_prefix(ctx.spec) + driver.command()
    rec.command = pgbench_command.shell_quote(argv)
    rec.extra["network"] = _network_facts(ctx.env, ctx.spec, ctx.dbname)
    stopped: str | None = None  # why stop_if ended the run early
    overran: str | None = None  # pgbench outlived its -T: a server that stopped answering
    proc: PgbenchProcess | None = None
    # The load's own parts (the engine's readers, the client process) are closed first, then
    # the scaffold's, in reverse order whatever ends it.
    with RunScaffold(ctx) as run:
        try:
            view = LiveView(ctx.console, driver.total_s, driver.lead_in_s, ctx.env.name)
            run.load_span(
                lambda: [proc.pid, *driver.other_pids()] if proc else driver.other_pids(),
                lambda: {"pgbench": driver.partial_series(rec.warmup_s)},
            )
            run.enter(_engine_reading(driver, run.art_dir, rec))
            proc = run.enter(_client_process(argv, driver, ctx.work))
            run.track_client("pgbench", proc.pid, *driver.other_pids())
            stopped, overran = _follow(proc, driver, view, ctx.live, ctx.stop_if)
            rc = proc.wait()
        except KeyboardInterrupt as stop:
            run.interrupt(stop)
            rc = proc.interrupt() if proc else -2

    files = run.after_load(driver.client_env.get("PGAPPNAME"), driver.engine)
    # no client process: stopped (a signal, Ctrl-C) before the load began, nothing it wrote
    stdout = (ctx.work / "pgbench.stdout").read_text(errors="replace") if proc is not None else ""
    stderr = "\n".join(proc.stderr_lines) if proc else ""
    files.write(f"{driver.engine}.stdout", stdout)
    if driver.progress_on == "stderr":  # else stderr went into stdout
        files.write(f"{driver.engine}.stderr", stderr)

    completed = rc == 0 and not run.interrupted and not stopped and not overran
    try:
        driver.fill(rec, completed, stdout, stderr, run.series_raw)
    except Exception as e:  # a broken output must not lose the run: keep what we have
        rec.extra["results_error"] = f"{type(e).__name__}: {e}"
    # the engine's own summary must agree with what pgrig computed (load/engines/crosscheck.py)
    disagreement = driver.cross_check(rec, stdout, stderr) if completed else None
    rec.status, rec.error = _outcome(
        rec, driver, rc, run.interrupted, stopped, disagreement, stdout, stderr
    )
    if overran and not run.interrupted:
        rec.status, rec.error = "failed", overran
        if run.ended:  # what the server was waiting for, said
            left = left_backends.describe(run.ended)
            rec.error = f"{overran}; left on the server and terminated: {left}"
    if (lost := driver.output_error()) is not None and _is_disk_error(lost[1]):
        files.problems.append(f"{lost[0]}: {lost[1]}")  # a full disk cut the engine's output
    return run.conclude(completed, driver.engine)


def _follow(
    proc: PgbenchProcess, driver: LoadDriver, view: LiveView, live: bool, stop_if: StopIf | None
) -> tuple[str | None, str | None]:
    """Show the live figures every second until the client ends; a reason stop_if gives
    stops it early (returned first); so does a client outliving its duration (returned
    second: see overrun_deadline)."""
    deadline = overrun_deadline(driver.total_s)
    with view if live else contextlib.nullcontext(view):
        while proc.running_after(1.0):
            tps, p95 = driver.live()
            if live:
                view.update(tps=tps, p95_ms=p95)
            stopped = stop_if(p95) if stop_if is not None else None
            if stopped:
                proc.interrupt()
                return stopped, None
            if deadline is not None and time.monotonic() > deadline:
                proc.interrupt()
                return None, overrun_message(driver.total_s)
    return None, None


# pgbench still running this long after its -T (beside its connection set-up, which -T does
# not count: many clients on a busy host take seconds): its server stopped answering
OVERRUN_S = 60.0


def overrun_deadline(total_s: int | None) -> float | None:
    """When pgbench must have ended (None: a -t run, bounded by transactions). A client that
    waits for a server which no longer answers (a host cut off, a synchronous commit whose
    replica is gone) never sees -T end: the run then fails instead of staying "running"."""
    if total_s is None:
        return None
    grace = float(os.environ.get("PGRIG_RUN_OVERRUN_S") or max(OVERRUN_S, total_s / 10))
    return time.monotonic() + total_s + grace


def overrun_message(total_s: int | None) -> str:
    return (
        f"pgbench was still running well after its {total_s} s: a server stopped answering "
        "(a host cut off, or commits waiting for a replica that is gone); stopped, the figures "
        "until then kept"
    )


def _outcome(
    rec: RunRecord,
    driver: LoadDriver,
    rc: int,
    interrupted: str,
    stopped: str | None,
    disagreement: str | None,
    stdout: str,
    stderr: str,
) -> tuple[RunStatus, str | None]:
    """The run's status and error, from how its load ended."""
    if interrupted:
        return "aborted", interrupted
    if stopped:
        return "aborted", f"stopped early: {stopped}"
    if rc != 0:
        return "failed", driver.failure(stdout, stderr, rc)
    if disagreement:
        return "failed", disagreement[:2000]
    if (nothing := run_steps.measured_nothing(rec)) is not None:
        return "failed", nothing
    return "ok", rec.error


# --- the load's own parts, closed before the scaffold's (load/core/run_scaffold.py) ---------


@contextlib.contextmanager
def _engine_reading(driver: LoadDriver, art_dir: Path, rec: RunRecord) -> Iterator[None]:
    """The engine's readers (pgbench: the per-transaction log); at the end they read what is
    left (pgbench: the last log lines)."""
    # The grid of whole seconds starts here, before the engine's clock (analysis/window.py);
    # the insights collection opens its window from it (insights/collector.py).
    origin = time.time()
    rec.extra["pgbench_launched_at"] = round(origin, 6)
    driver.start(int(origin * 1e6), art_dir)
    try:
        yield
    finally:
        driver.stop()


@contextlib.contextmanager
def _client_process(argv: list[str], driver: LoadDriver, work: Path) -> Iterator[PgbenchProcess]:
    """The load client's process, never left running."""
    proc = PgbenchProcess(
        argv,
        env=driver.client_env,
        cwd=work,
        stdout_path=work / "pgbench.stdout",
        on_stderr_line=driver.on_line,
        progress_on=driver.progress_on,
    )
    try:
        yield proc
    finally:
        proc.ensure_dead()


def _network_facts(env: Environment, spec: RunRequest, dbname: str) -> NetworkDoc:
    """Round trips from this machine to where pgbench connects (load/remote/network.py)."""
    from pgrig.load.remote import network

    client = run_steps.client_env(env, spec, dbname)
    host = client.get("PGHOST", "127.0.0.1").split(",")[0]  # --target split: the first one
    port = int(client.get("PGPORT", "5432").split(",")[0])
    return NetworkDoc(paths=[network.local_path(host, port)])


def _is_disk_error(text: str) -> bool:
    return "No space left" in text or "ENOSPC" in text or "Errno 28" in text
