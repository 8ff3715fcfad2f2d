"""The run orchestrator: one pgbench run, measured, sampled and archived whatever happens.

Order of events (each step recorded in the RunRecord):
  validate inputs -> resolve scripts -> apply per-run settings -> CHECKPOINT -> snapshot settings,
  versions, host -> archive row "running" -> samplers + log reader + pgbench (lead-in and
  measured window in ONE pgbench process) -> results -> archive row "ok"/"failed"/"aborted".

The warm-up is excluded by time: pgbench runs for lead-in + window whole seconds; a reader
thread folds the per-transaction log as pgbench writes it (load/engines/txlog_follower.py,
analysis/txlog.py), and only transactions that END inside the window count towards TPS,
latency and per-script figures. Where the window lies on pgbench's clock: analysis/window.py.
Series keep the lead-in (negative t) so charts can shade it.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rich.console import Console

from pgrig import __version__
from pgrig.archive.records import RunRecord, RunStatus
from pgrig.errors import PgrigError
from pgrig.load.core import guard, harness_meter, lifecycle, prewarm, run_files, run_steps
from pgrig.load.core.live import LiveView
from pgrig.load.core.preflight import check_scripts, check_sysbench_data, check_tables
from pgrig.load.core.run_context import RunContext
from pgrig.load.core.run_steps import RunInterrupted, StopIf
from pgrig.load.core.server_log_follow import RunServerLog
from pgrig.load.engines import command as pgbench_command
from pgrig.load.engines import engine_choice, results
from pgrig.load.engines.process import PgbenchProcess
from pgrig.load.remote import host_samplers
from pgrig.provision.state.environment import DEFAULT_DATABASE, Environment, without_libpq_vars
from pgrig.record.documents import DiskLimitDoc, NetworkDoc, PoolerDoc, RunExtra
from pgrig.record.protocol import RunStore
from pgrig.request import RunRequest, load_values

if TYPE_CHECKING:
    from pgrig.insights.collector import Collection
    from pgrig.load.engines.driver import LoadDriver
    from pgrig.load.remote.host_samplers import HostSamplers
    from pgrig.metrics.os_metrics import OsSampler
    from pgrig.metrics.pooler_metrics import PoolerSampler
    from pgrig.metrics.sampler import Sampler
    from pgrig.provision.state.env_lock import EnvLock
    from pgrig.workloads.scenario import RunScripts


def execute(
    spec: RunRequest,
    *,
    archive: RunStore,
    console: Console | None = None,
    live: bool = True,
    stop_if: StopIf | None = None,
) -> RunRecord:
    """Run one pgbench benchmark and archive it. Returns the archived record.

    Raises PgrigError for bad input (nothing archived, nothing changed) and RunInterrupted
    when the user pressed Ctrl-C (the aborted run is archived first). `stop_if` is asked every
    second with the p95 (ms) of the latest whole second; a reason it returns stops pgbench and
    the run is archived "aborted" with that reason (a tuning guardrail, tune/guardrails.py).
    """
    console = console or Console(stderr=True)
    spec = _with_scripts(spec)
    if spec.load_from:
        from pgrig.load.core import multi_runner

        multi_runner.check(spec)
    env = Environment.load(spec.env_name)
    env.check_intact()
    if spec.database is None and env.default_database != DEFAULT_DATABASE:
        spec = spec.model_copy(update={"database": env.default_database})  # the DSN's own
    with guard.holding(env, console) as lock:  # one run per environment; a dead run undone
        return _execute(spec, env, lock, archive, console, live, stop_if)


def _execute(
    spec: RunRequest,
    env: Environment,
    lock: EnvLock,
    archive: RunStore,
    console: Console,
    live: bool,
    stop_if: StopIf | None,
) -> RunRecord:
    from pgrig.machine.checks import cpu_mark
    from pgrig.provision import cluster

    # The host checks' CPU steal and busy share are measured over the run's own preparation
    # (from here to the record), not over a 0.5 s pause on the critical path.
    mark = cpu_mark()
    dbname = spec.database or env.default_database
    if env.managed:
        cluster.ensure_running(env)
    conninfo = env.conninfo(dbname)
    server = {**_server_facts(env, dbname), "cpu_mark": mark}
    _check_connection(spec, env)  # pooler, limits, pinning: before anything starts
    if spec.load_from:
        from pgrig.load.core import multi_runner

        multi_runner.check_targets(spec, env, dbname)
    work = lifecycle.work_dir()
    try:
        planned, scenario_info = _resolve_scripts(spec, env, dbname, work)
        spec = spec.model_copy(
            update={
                "scripts": planned.scripts,
                "defines": {**planned.defines, **spec.defines},
                "max_tries": _max_tries(spec, planned.max_tries, env),
            }
        )
        check_sysbench_data(spec, dbname, scenario_info)
        check_tables(env, spec, dbname)
        check_scripts(env, spec)
        run_settings = {**_profile_settings(spec.profile, env, server["major"]), **spec.settings}
        restore = _apply_run_settings(env, run_settings)
        try:
            return _run(
                spec, env, dbname, conninfo, server, scenario_info, work, archive, console, live,
                lock, stop_if,
            )  # fmt: skip
        finally:
            restore()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _with_scripts(spec: RunRequest) -> RunRequest:
    """The request with its workload's scripts (TPC-C writes its own later, per run) and its
    scenario, after checking that every -D variable is read by a script (pgbench would
    silently ignore the others)."""
    from pgrig.workloads import specs

    scripts = spec.scripts or specs.parse_workloads([spec.workload])
    unused = specs.unused_defines(scripts, spec.defines)
    if unused:
        raise PgrigError(
            f"--define {unused[0]}: no script of workload {spec.workload!r} reads :{unused[0]}"
        )
    scenario = spec.scenario or specs.scenario_of(scripts, [spec.workload])
    return spec.model_copy(update={"scripts": scripts, "scenario": scenario})


def _max_tries(spec: RunRequest, recommended: int, env: Environment) -> int:
    """A workload's recommended retries (TPC-C's serialization failures) where the request
    asks for fewer and pgbench can retry (15+); unlimited (0) stays unlimited."""
    if spec.max_tries == 0 or recommended <= spec.max_tries:
        return spec.max_tries
    major = pgbench_command.pgbench_major(env.binary("pgbench")) or 0
    return recommended if major >= 15 else spec.max_tries


def _server_facts(env: Environment, dbname: str) -> dict[str, Any]:
    from pgrig.metrics import pg_snapshot
    from pgrig.workloads import database

    with database.connect(env, "postgres") as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname=%s", (dbname,)).fetchone():
            raise PgrigError(
                f"database {dbname!r} does not exist in {env.name}: "
                f"run `pgrig db generate {env.name} ...` first"
            )
        full, major, _num = pg_snapshot.server_version(conn)
    return {"version": full, "major": major}


def _resolve_scripts(
    spec: RunRequest, env: Environment, dbname: str, work: Path
) -> tuple[RunScripts, dict[str, Any]]:
    """What the run executes, from its scenario (workloads/scenario.py), and the dataset the
    database holds (a partial one is refused)."""
    from pgrig.workloads import datasets, scenario

    info: dict[str, Any] = dict(datasets.usable(env, dbname) or {})
    of_run = scenario.of(spec.workload, (s.name for s in spec.scripts))
    return of_run.run_scripts(spec, env, dbname, work, info), info


def _profile_settings(profile: str | None, env: Environment, major: int) -> dict[str, str]:
    """A per-run profile resolves exactly as `env create --profile` does (same io_uring rule)."""
    if not profile:
        return {}
    from pgrig.provision import cluster

    settings, _notes = cluster.resolve_profile(profile, major, env.bindir)
    return settings


def _apply_run_settings(env: Environment, settings: dict[str, str]) -> Callable[[], object]:
    if not settings:
        return lambda: None
    if not env.managed:
        raise PgrigError(
            f"{env.name} is an external server: pgrig does not change its configuration "
            "(--set needs a managed environment)"
        )
    from pgrig.provision import run_settings

    return run_settings.apply_run_settings(env, settings)


def _run(
    spec: RunRequest,
    env: Environment,
    dbname: str,
    conninfo: str,
    server: dict[str, Any],
    scenario_info: dict[str, Any],
    work: Path,
    archive: RunStore,
    console: Console,
    live: bool,
    lock: EnvLock,
    stop_if: StopIf | None = None,
) -> RunRecord:
    from pgrig.machine.facts import host_facts
    from pgrig.metrics import pg_snapshot
    from pgrig.workloads import database

    driver = engine_choice.for_request(
        spec,
        env,
        work,
        client_env={**without_libpq_vars(), **run_steps.client_env(env, spec, dbname)},
        prefix=_client_prefix(spec),
        dataset=scenario_info,
        archive=archive,  # the expected rate of --txlog auto (load/engines/txlog_mode.py)
    )
    engine_version = driver.version()  # fails here, before anything is archived

    restored = guard.verify_live(env, console)  # the server is what the record will say
    disk = _disk_limit(env)  # the kernel's truth about the disk limit, before the record
    with database.connect(env, dbname) as conn:
        warmed = prewarm.prewarm(conn) if spec.prewarm else None
        pg_snapshot.checkpoint(conn)
        settings = pg_snapshot.settings_snapshot(conn)
        db_size = pg_snapshot.database_size(conn, dbname)

    rec = RunRecord(
        **load_values(spec),
        env_name=env.name,
        started_at=datetime.now(UTC),
        study=spec.study,
        study_point=spec.study_point,
        repeat=spec.repeat,
        managed=env.managed,
        target=env.masked_target(),
        server_version=server["version"],
        server_major=server["major"],
        pgbench_version=engine_version if driver.engine == "pgbench" else None,
        database=dbname,
        scenario=spec.scenario or scenario_info.get("scenario"),
        scale=scenario_info.get("scale") or scenario_info.get("warehouses"),
        db_size_bytes=db_size,
        note=spec.note,
        owner=_owner(),
        tags=dict(spec.tags),
        settings=settings,
        settings_layers=_layers(env, spec),
        disk_limit=disk,
        host=host_facts(
            env.datadir if env.managed else None,
            clients=spec.clients,
            cpus=run_steps.placement(spec).sides(spec.via),
            cpu_since=server.get("cpu_mark"),
        ),
        extra={
            "pgrig_version": __version__,
            "dataset": scenario_info,
            "load_engine": {"name": driver.engine, "version": engine_version},
        },
    )
    rec.txlog = driver.txlog_mode  # the mode used, not "auto"
    rec.extra.update(_connection_extra(env, spec))
    if env.replicas:
        from pgrig.load.core import topology

        rec.extra["topology"] = topology.describe(env)
    if restored:
        rec.extra["restored_before_run"] = restored
    if disk is not None and disk.get("in_force") is False:
        problems = "; ".join(disk.get("problems", []))
        rec.add_warning(
            "disk_limit", f"the disk limit {disk.get('text')} was not in force: {problems}"
        )
    if warmed is not None:
        rec.extra["prewarm"] = warmed
        if "skipped" in warmed:
            rec.add_warning("no_prewarm", f"the cache was not warmed: {warmed['skipped']}")
    rec.id = archive.begin_run(rec)
    lock.describe(rec.id)  # a refused second run names this one
    ctx = RunContext(rec, spec, env, dbname, conninfo, work, archive, console, live, stop_if)
    try:
        if spec.load_from:  # pgbench on load hosts, logs merged (load/core/multi_runner.py)
            from pgrig.load.core import multi_runner

            return multi_runner.measure(
                ctx, env.binary("pgbench"), driver if driver.engine == "sysbench" else None
            )
        return _measure(ctx, driver)
    except RunInterrupted:
        raise
    except KeyboardInterrupt as stop:
        # Ctrl-C or SIGTERM outside pgbench's own span (insights starting, results being
        # written): the run still ends "aborted", never "running" (later "lost").
        if _still_running(archive, rec):
            rec.status, rec.ended_at = "aborted", rec.ended_at or datetime.now(UTC)
            rec.error = guard.interruption(stop)
            with contextlib.suppress(Exception):
                run_steps.finish(rec, archive, console)
        raise RunInterrupted(rec) from None
    except BaseException as e:
        # Whatever broke after the row was written, the run ends as "failed", never "running".
        if rec.status == "running":
            rec.status, rec.ended_at = "failed", datetime.now(UTC)
            rec.error = f"pgrig: {type(e).__name__}: {e}"[:2000]
            with contextlib.suppress(Exception):
                run_steps.finish(rec, archive, console)
        raise


def _measure(ctx: RunContext, driver: LoadDriver) -> RunRecord:
    """pgbench (or sysbench) here, over the run's window, with every sampler around it."""
    from pgrig.archive import artifacts
    from pgrig.load.core import plan_top_up, wait_sources

    rec, spec, env, dbname, conninfo = ctx.rec, ctx.spec, ctx.env, ctx.dbname, ctx.conninfo
    work, archive, console = ctx.work, ctx.archive, ctx.console
    live, stop_if = ctx.live, ctx.stop_if
    assert rec.id is not None  # begin_run gave it one
    art_dir = artifacts.run_artifacts_dir(rec.id, archive=archive.url)  # keyed by archive
    art_dir.mkdir(parents=True, exist_ok=True)

    driver.before_launch(console)  # e.g. pgbench's separate warm-up of a -t run
    argv = _client_prefix(spec) + driver.command()  # taskset for --client-cpus (execs: same pid)
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
        commits = _TargetCommits(env, spec, dbname, rec)
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
    host_samplers.record(rec, other_hosts)
    stdout = (work / "pgbench.stdout").read_text(errors="replace")
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
    other_hosts.blame(rec)  # the db host cut off: named before pgbench's errors

    if server_log is not None:
        server_log.finish(files, rec)
    run_steps.pooler_results(rec, env, pooler_source, pooler_log_offsets, art_dir)
    if env.replicas:
        from pgrig.load.core import topology

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
    return "ok", rec.error


def _files_outcome(rec: RunRecord, driver: LoadDriver, files: run_files.RunFiles) -> None:
    """A run whose files a full disk cut short fails if it was ok, else says so in a warning."""
    if (lost := driver.output_error()) is not None and _is_disk_error(lost[1]):
        files.problems.append(f"{lost[0]}: {lost[1]}")
    run_steps.files_outcome(rec, files)


class _TargetCommits:
    """Transactions per server of a topology over the run (load/core/topology.py); nothing without
    replicas."""

    def __init__(self, env: Environment, spec: RunRequest, dbname: str, rec: RunRecord) -> None:
        self.env, self.role, self.dbname = env, spec.target_role, dbname
        self.before: dict[str, int | None] | None = None
        self.t0 = time.monotonic()
        if env.replicas:
            from pgrig.load.core import topology

            rec.extra["target_role"] = spec.target_role
            self.before = topology.commits(env, self.role, dbname)

    def results(self, rec: RunRecord) -> None:
        if self.before is None:
            return
        from pgrig.load.core import topology

        seconds = time.monotonic() - self.t0
        after = topology.commits(self.env, self.role, self.dbname)
        topology.target_results(rec, self.before, after, seconds)


# --- the parts of a run's load, each undone when the load ends (_measure's ExitStack) ---------


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


def _still_running(archive: RunStore, rec: RunRecord) -> bool:
    """Whether the archive still has the run as "running" (its last write not yet made)."""
    if rec.status == "running" or rec.id is None:
        return True
    try:
        return bool(archive.get_run(rec.id).status == "running")
    except Exception:
        return True


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


def _disk_limit(env: Environment) -> DiskLimitDoc | None:
    """What the kernel holds of the environment's disk limit (provision/server/disk_throttle):
    a limit found not in force (its cgroup changed behind pgrig) is put back once and read
    again; None for servers pgrig does not run here."""
    if not env.managed:
        return None
    from pgrig.provision.server import disk_throttle, postmaster

    doc = disk_throttle.in_force(env, postmaster.pid(env))
    if doc.get("in_force") is False:
        disk_throttle.apply(env, postmaster.pid(env))
        found = doc.get("problems", [])
        doc = disk_throttle.in_force(env, postmaster.pid(env))
        doc["reapplied_because"] = found
    return cast(DiskLimitDoc, doc)


def _layers(env: Environment, spec: RunRequest) -> dict[str, dict[str, str]]:
    from pgrig.provision.settings import insights_layer, topology_layer

    return {
        "insights": insights_layer.settings(env),
        "topology": topology_layer.settings(env),
        "profile": {"__name__": env.profile, **env.profile_settings},
        "environment": dict(env.settings),
        "run": {**({"__profile__": spec.profile} if spec.profile else {}), **spec.settings},
    }


def _owner() -> str:
    with contextlib.suppress(Exception):
        return os.environ.get("PGRIG_OWNER") or getpass.getuser()
    return "unknown"


# --- connection target, pooler and CPU pinning (see provision/pooler/, load/core/pinning.py) ------


def _check_connection(spec: RunRequest, env: Environment) -> str:
    """Everything about where pgbench connects that can fail, checked before anything starts:
    via/connect, max_connections (direct) or the pooler's limits, CPU lists, open files.
    Starts the pooler when it is down. Returns the normalized via ("direct", "pgbouncer")."""
    from pgrig.load.core import pinning
    from pgrig.provision import pooler

    run_steps.placement(spec)  # CPU lists and counts checked against this machine
    if spec.target_role != "primary":
        from pgrig.load.core import topology

        major = pgbench_command.pgbench_major(env.binary("pgbench"))
        topology.check_target(env, spec, major)
    if spec.server_cpus and not env.managed:
        raise PgrigError(f"--server-cpus needs a managed environment ({env.name!r} is external)")
    via = pooler.check_run(
        env,
        clients=spec.clients,
        via=spec.via,
        connect=spec.connect,
        protocol=spec.protocol,
        run_settings=spec.settings,
    )
    pinning.raise_nofile(pinning.nofile_for_clients(spec.clients))
    if via != "direct":
        pooler.start(env)  # no-op when running
    return via


def _client_prefix(spec: RunRequest) -> list[str]:
    from pgrig.load.core import pinning

    return pinning.client_prefix(run_steps.placement(spec).client)


def _connection_extra(env: Environment, spec: RunRequest) -> RunExtra:
    """What the archive keeps about the connection path and CPU placement of a run."""
    from pgrig.load.core import pinning
    from pgrig.provision import pooler

    out = RunExtra(connection={"via": spec.via, "connect": spec.connect})
    cpus = {
        side: pinning.format_cpus(chosen)
        for side, chosen in run_steps.placement(spec).sides(spec.via).items()
    }
    if cpus:
        out["cpus"] = cpus
    if spec.via != "direct" and (cfg := pooler.config_of(env)) is not None:
        # the configuration's fields are PoolerConfig's (asdict), declared in PoolerDoc
        config = {**cfg.as_dict(), "version": pooler.version()}
        out["pooler"] = cast(PoolerDoc, {**config, "nofile": cfg.nofile, "target": cfg.target})
    return out
