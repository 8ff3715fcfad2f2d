"""The load on this machine over the run's window, every sampler around it, and how it ended."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgrig.archive.records import RunRecord, RunStatus
from pgrig.load.core import guard, harness_meter, left_backends, lifecycle, run_files, run_steps
from pgrig.load.core.live import LiveView
from pgrig.load.core.run_context import RunContext
from pgrig.load.core.run_steps import StopIf
from pgrig.load.core.server_log_follow import RunServerLog
from pgrig.load.engines import command as pgbench_command
from pgrig.load.engines import results
from pgrig.load.engines.process import PgbenchProcess
from pgrig.load.remote import host_samplers
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import NetworkDoc, RunExtra
from pgrig.request import RunRequest

if TYPE_CHECKING:
    from pgrig.insights.collector import Collection
    from pgrig.load.engines.driver import LoadDriver
    from pgrig.load.remote.host_samplers import HostSamplers
    from pgrig.metrics.os_metrics import OsSampler
    from pgrig.metrics.pooler_metrics import PoolerSampler
    from pgrig.metrics.sampler import Sampler


# The warm-up is excluded by time: pgbench runs for lead-in + window whole seconds in ONE
# process; a reader thread folds the per-transaction log as pgbench writes it
# (load/engines/txlog_follower.py, analysis/txlog.py), and only transactions that END inside the
# window count towards TPS, latency and per-script figures. Where the window lies on pgbench's
# clock: analysis/window.py. Series keep the lead-in (negative t) so charts can shade it.
def measure(ctx: RunContext, driver: LoadDriver) -> RunRecord:
    """pgbench (or sysbench) here, over the run's window, with every sampler around it."""
    from pgrig.archive import artifacts
    from pgrig.load.core import plan_top_up, topology, wait_sources

    rec, spec, env, dbname, conninfo = ctx.rec, ctx.spec, ctx.env, ctx.dbname, ctx.conninfo
    work, archive, console = ctx.work, ctx.archive, ctx.console
    live, stop_if = ctx.live, ctx.stop_if
    assert rec.id is not None  # begin_run gave it one
    art_dir = artifacts.run_artifacts_dir(rec.id, archive=archive.url)  # keyed by archive
    art_dir.mkdir(parents=True, exist_ok=True)

    driver.before_launch(console)  # e.g. pgbench's separate warm-up of a -t run
    argv = run_steps.client_prefix(spec) + driver.command()
    rec.command = pgbench_command.shell_quote(argv)
    pooler_log_offsets = run_steps.pooler_log_offsets(env, spec)
    rec.extra["network"] = _network_facts(env, spec, dbname)
    series_raw: dict[str, Any] = {}  # filled as the samplers stop
    interrupted = ""  # why the user or a signal stopped the run, if they did
    stopped: str | None = None  # why stop_if ended the run early
    overran: str | None = None  # pgbench outlived its -T: a server that stopped answering
    proc: PgbenchProcess | None = None
    server_log: RunServerLog | None = None  # the run's part of the server log (read at the end)
    # Everything the load needs, undone in reverse order whatever ends it: the run's lease
    # (heartbeat, partial series), the client process, the engine's readers, the server's
    # CPU pinning, the samplers (their series kept), the insights collection's settings.
    with contextlib.ExitStack() as stack:
        server_log = RunServerLog.open(env, art_dir)  # first: the collection's reloads are ours
        collection = stack.enter_context(_insights_collection(env, dbname, spec, rec))
        if server_log is not None:
            server_log.feed = collection.log_feed()
            server_log.follow()
            stack.callback(server_log.stop)
        commits = topology.TargetCommits(env, spec, dbname, rec)
        other_hosts = stack.enter_context(_other_hosts(env, series_raw, spec.via))
        waits = wait_sources.open_sources(env, conninfo, dbname, spec, rec.extra)  # never raises
        sampler, os_sampler, pooler_source = stack.enter_context(
            _sampling(env, conninfo, dbname, spec.via, series_raw, waits, rec.extra)
        )
        stack.enter_context(_server_pinned(env, spec))
        try:
            view = LiveView(console, driver.total_s, driver.lead_in_s, env.name)
            stack.enter_context(  # what pgrig itself takes, over the load's span
                harness_meter.metering(env, dbname, rec, lambda: [proc.pid] if proc else [])
            )
            stack.enter_context(_engine_reading(driver, art_dir, rec))
            proc = stack.enter_context(_client_process(argv, driver, work))
            run_lease = lifecycle.RunLease(
                archive, rec, art_dir, lambda: _partial_series(rec, sampler, driver)
            )
            run_lease.start()  # heartbeat and partial series, until the load has ended
            stack.callback(run_lease.stop)
            _track_client(os_sampler, proc.pid)
            stopped, overran = _follow(proc, driver, view, live, stop_if)
            rc = proc.wait()
        except KeyboardInterrupt as stop:
            interrupted = guard.interruption(stop)
            rc = proc.interrupt() if proc else -2

    rec.ended_at = datetime.now(UTC)
    ended = left_backends.end_left_backends(
        rec, env, spec, driver.client_env.get("PGAPPNAME"), driver.engine
    )
    host_samplers.record(rec, other_hosts)
    # no client process: stopped (a signal, Ctrl-C) before the load began, nothing it wrote
    stdout = (work / "pgbench.stdout").read_text(errors="replace") if proc is not None else ""
    stderr = "\n".join(proc.stderr_lines) if proc else ""
    files = run_files.RunFiles(rec, art_dir)  # a full disk fails the run, keeps its figures
    rec.artifacts = {}
    files.write(f"{driver.engine}.stdout", stdout)
    if driver.progress_on == "stderr":  # else stderr went into stdout
        files.write(f"{driver.engine}.stderr", stderr)

    completed = rc == 0 and not interrupted and not stopped and not overran
    try:
        driver.fill(rec, completed, stdout, stderr, series_raw)
    except Exception as e:  # a broken output must not lose the run: keep what we have
        rec.extra["results_error"] = f"{type(e).__name__}: {e}"
    if completed and driver.engine == "pgbench":  # rare scripts' plans, after the window
        plan_top_up.run(collection, spec, env, dbname, rec)
    # the engine's own summary must agree with what pgrig computed (load/engines/crosscheck.py)
    disagreement = driver.cross_check(rec, stdout, stderr) if completed else None
    rec.status, rec.error = _outcome(
        rec, driver, rc, interrupted, stopped, disagreement, stdout, stderr
    )
    if overran and not interrupted:
        rec.status, rec.error = "failed", overran
        if ended:  # what the server was waiting for, said
            left = left_backends.describe(ended)
            rec.error = f"{overran}; left on the server and terminated: {left}"
    other_hosts.blame(rec)  # the db host cut off: named before pgbench's errors

    if server_log is not None:
        server_log.finish(files, rec)
    run_steps.pooler_results(rec, env, pooler_source, pooler_log_offsets, art_dir)
    if env.replicas:
        topology.lag_results(rec, env, sampler)
        commits.results(rec)
    collection.finish(rec, art_dir)
    harness_meter.add_server_log(rec)
    _files_outcome(rec, driver, files)
    return run_steps.conclude(rec, art_dir, archive, console, interrupted)


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


def _files_outcome(rec: RunRecord, driver: LoadDriver, files: run_files.RunFiles) -> None:
    """A run whose files a full disk cut short fails if it was ok, else says so in a warning."""
    if (lost := driver.output_error()) is not None and _is_disk_error(lost[1]):
        files.problems.append(f"{lost[0]}: {lost[1]}")
    run_steps.files_outcome(rec, files)


# --- the parts of a run's load, each undone when the load ends (measure's ExitStack) ----------


@contextlib.contextmanager
def _insights_collection(
    env: Environment, dbname: str, spec: RunRequest, rec: RunRecord
) -> Iterator[Collection]:
    """The insights collection (it never raises); its per-run settings undone at the end."""
    from pgrig.insights import collector as insights

    collection = insights.start(env, dbname, spec, rec)
    try:
        yield collection
    finally:
        collection.stop()


@contextlib.contextmanager
def _other_hosts(
    env: Environment, series: dict[str, Any], via: str = "direct"
) -> Iterator[HostSamplers]:
    """The samplers of the server's host when it is another machine; their series kept."""
    other = host_samplers.for_env(env, via)  # the server's host, and the pooler's on --via
    try:
        yield other
    finally:
        series.update(other.stop())


@contextlib.contextmanager
def _sampling(
    env: Environment,
    conninfo: str,
    dbname: str,
    via: str,
    series: dict[str, Any],
    waits: Sequence[Any] = (),
    extra: RunExtra | None = None,
) -> Iterator[tuple[Sampler, OsSampler, PoolerSampler | None]]:
    """This machine's OS, server and pooler samplers and the wait sources
    (load/core/wait_sources.py:
    their cost recorded in `extra`); their series kept."""
    try:
        sampler, os_sampler, pooler_source = run_steps.start_sampler(
            env, conninfo, dbname, via, waits
        )
    except BaseException:
        for source in waits:  # the Sampler that would close them was never made
            source.close()
        raise
    try:
        yield sampler, os_sampler, pooler_source
    finally:
        series.update(sampler.stop())
        if extra is not None:
            from pgrig.load.core import wait_sources

            wait_sources.record_stats(extra, list(waits))


@contextlib.contextmanager
def _server_pinned(env: Environment, spec: RunRequest) -> Iterator[None]:
    """--server-cpus for the load's span (journaled: a killed run's pinning is undone later)."""
    unpin = run_steps.pin_server(env, spec)
    try:
        yield
    finally:
        unpin()


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


def _partial_series(rec: RunRecord, sampler: Sampler, driver: LoadDriver) -> dict[str, Any]:
    """The series gathered so far, as a lost run would keep them (load/core/lifecycle.py)."""
    out: dict[str, Any] = {"pgbench": driver.partial_series(rec.warmup_s)}
    origin = results.sample_origin(rec)
    if origin is not None:
        for kind, cols in sampler.snapshot().items():
            kept = results.rebased(cols, origin)
            if kept is not None:
                out[kind] = kept
    return out


def _is_disk_error(text: str) -> bool:
    return "No space left" in text or "ENOSPC" in text or "Errno 28" in text


def _track_client(os_sampler: Any, pid: int) -> None:
    from pgrig.metrics.os_metrics import fixed_pids

    with contextlib.suppress(Exception):
        os_sampler.track_processes("pgbench", fixed_pids(pid), children=False)
