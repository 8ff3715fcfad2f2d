"""The run orchestrator: one pgbench run, measured, sampled and archived whatever happens.

Order of events (each step recorded in the RunRecord):
  validate inputs -> resolve scripts -> apply per-run settings -> CHECKPOINT -> snapshot settings,
  versions, host -> archive row "running" -> samplers + log reader + pgbench (lead-in and
  measured window in ONE pgbench process) -> results -> archive row "ok"/"failed"/"aborted".

The warm-up is excluded by time: pgbench runs for lead-in + window whole seconds; a reader
thread folds the per-transaction log as pgbench writes it (load/txlog_follower.py,
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
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from pgrig import __version__
from pgrig.analysis.txlog import TxlogStream
from pgrig.analysis.window import WindowPlan
from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.load import command as pgbench_command
from pgrig.load import guard, lifecycle, pgbench_output, results
from pgrig.load.live import LiveView
from pgrig.load.preflight import check_scripts
from pgrig.load.process import PgbenchProcess, die_with_parent
from pgrig.load.txlog_follower import TxlogFollower
from pgrig.provision.environment import DEFAULT_DATABASE, Environment, without_libpq_vars
from pgrig.request import RunRequest, load_values

if TYPE_CHECKING:
    from pgrig.load.pinning import Placement
    from pgrig.metrics.os_metrics import OsSampler
    from pgrig.metrics.pooler_metrics import PoolerSampler
    from pgrig.metrics.sampler import Sampler
    from pgrig.provision.env_lock import EnvLock


StopIf = Callable[[float | None], str | None]


class RunInterrupted(Exception):
    """Raised after an aborted run has been archived, so the CLI can exit 130."""

    def __init__(self, record: RunRecord):
        super().__init__(f"run {record.id} aborted")
        self.record = record


def execute(
    spec: RunRequest,
    *,
    archive: Any,
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
    env = Environment.load(spec.env_name)
    env.check_intact()
    with guard.holding(env, console) as lock:  # one run per environment; a dead run undone
        return _execute(spec, env, lock, archive, console, live, stop_if)


def _execute(
    spec: RunRequest,
    env: Environment,
    lock: EnvLock,
    archive: Any,
    console: Console,
    live: bool,
    stop_if: StopIf | None,
) -> RunRecord:
    from pgrig.provision import cluster

    dbname = spec.database or DEFAULT_DATABASE
    if env.managed:
        cluster.ensure_running(env)
    conninfo = env.conninfo(dbname)
    server = _server_facts(env, dbname)
    _check_connection(spec, env)  # pooler, limits, pinning: before anything starts
    work = lifecycle.work_dir()
    try:
        scripts, defines, max_tries, scenario_info = _resolve_scripts(spec, env, dbname, work)
        spec = spec.model_copy(
            update={
                "scripts": scripts,
                "defines": {**defines, **spec.defines},
                "max_tries": _max_tries(spec, max_tries, env),
            }
        )
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
) -> tuple[list, dict[str, str], int, dict[str, Any]]:
    from pgrig.workloads import datasets

    info: dict[str, Any] = dict(datasets.get(env, dbname) or {})
    if spec.workload == "tpcc":
        from pgrig.workloads import tpcc

        if info.get("scenario") != "tpcc":
            raise PgrigError(
                f"database {dbname!r} of {env.name} holds no TPC-C data: "
                f"run `pgrig db generate {env.name} --scenario tpcc --warehouses W` first"
            )
        scripts, defines, max_tries = tpcc.pgbench_scripts(
            work,
            warehouses=int(info["warehouses"]),
            mix=spec.tpcc_mix,
            all_warehouses=spec.all_warehouses,
            conninfo=env.conninfo(dbname),
            protocol=spec.protocol,
            stock_level=spec.tpcc_stock_level,
        )
        return scripts, defines, max_tries, info
    if any(s.name.startswith("tickets:") for s in spec.scripts):
        from pgrig.workloads import tickets

        return list(spec.scripts), tickets.defines(info, env.name, dbname), spec.max_tries, info
    return list(spec.scripts), {}, spec.max_tries, info


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
    from pgrig.provision import config

    return config.apply_run_settings(env, settings)


def _run(
    spec: RunRequest,
    env: Environment,
    dbname: str,
    conninfo: str,
    server: dict[str, Any],
    scenario_info: dict[str, Any],
    work: Path,
    archive: Any,
    console: Console,
    live: bool,
    lock: EnvLock,
    stop_if: StopIf | None = None,
) -> RunRecord:
    from pgrig.host.facts import host_facts
    from pgrig.metrics import pg_snapshot
    from pgrig.workloads import database

    pgbench = env.binary("pgbench")
    pgbench_version = _pgbench_version(pgbench)

    restored = guard.verify_live(env, console)  # the server is what the record will say
    with database.connect(env, dbname) as conn:
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
        pgbench_version=pgbench_version,
        database=dbname,
        scenario=spec.scenario or scenario_info.get("scenario"),
        scale=scenario_info.get("scale") or scenario_info.get("warehouses"),
        db_size_bytes=db_size,
        note=spec.note,
        owner=_owner(),
        tags=dict(spec.tags),
        settings=settings,
        settings_layers=_layers(env, spec),
        host=host_facts(
            env.datadir if env.managed else None,
            clients=spec.clients,
            cpus=_placement(spec).sides(spec.via),
        ),
        extra={"pgrig_version": __version__, "dataset": scenario_info},
    )
    rec.extra.update(_connection_extra(env, spec))
    if restored:
        rec.extra["restored_before_run"] = restored
    rec.id = archive.begin_run(rec)
    lock.describe(rec.id)  # a refused second run names this one
    try:
        return _measure(
            rec, spec, env, dbname, conninfo, pgbench, work, archive, console, live, stop_if
        )
    except (RunInterrupted, KeyboardInterrupt):
        raise
    except BaseException as e:
        # Whatever broke after the row was written, the run ends as "failed", never "running".
        if rec.status == "running":
            rec.status, rec.ended_at = "failed", datetime.now(UTC)
            rec.error = f"pgrig: {type(e).__name__}: {e}"[:2000]
            with contextlib.suppress(Exception):
                _finish(rec, archive, console)
        raise


def _measure(
    rec: RunRecord,
    spec: RunRequest,
    env: Environment,
    dbname: str,
    conninfo: str,
    pgbench: str,
    work: Path,
    archive: Any,
    console: Console,
    live: bool,
    stop_if: StopIf | None = None,
) -> RunRecord:
    from pgrig.archive import artifacts
    from pgrig.insights import collector as insights

    assert rec.id is not None  # begin_run gave it one
    art_dir = artifacts.run_artifacts_dir(rec.id)
    art_dir.mkdir(parents=True, exist_ok=True)
    log_prefix = work / "txlog"

    plan = WindowPlan.for_run(spec.warmup_s, spec.duration_s)
    total_s = plan.pgbench_seconds  # lead-in + window, whole seconds (analysis/window.py)
    if total_s is None and spec.warmup_s > 0:
        _separate_warmup(spec, env, dbname, pgbench, console)
    argv = pgbench_command.build_pgbench_command(
        pgbench, spec, log_prefix=str(log_prefix), total_seconds=total_s, progress=True
    )
    argv = _client_prefix(spec) + argv  # taskset for --client-cpus (execs: same pid)
    rec.command = pgbench_command.shell_quote(argv)
    server_log_offset = _log_size(env)
    pooler_log_offsets = _pooler_log_offsets(env, spec)
    collection = insights.start(env, dbname, spec, rec)  # never raises (insights/collector.py)

    sampler, os_sampler, pooler_source = _start_sampler(env, conninfo, dbname, spec.via)
    try:
        unpin = _pin_server(env, spec)  # --server-cpus, undone when pgbench has ended
    except BaseException:
        sampler.stop()
        collection.stop()
        raise
    interrupted = ""  # why the user or a signal stopped the run, if they did
    stopped: str | None = None  # why stop_if ended the run early
    progress_points: list[Any] = []
    run_lease = lifecycle.RunLease(
        archive, rec, art_dir, lambda: _partial_series(rec, sampler, progress_points)
    )
    proc: PgbenchProcess | None = None
    follower: TxlogFollower | None = None
    stream = TxlogStream(
        origin_us=0,  # set at launch, below
        plan=plan,
        has_lag=spec.rate is not None,
        has_retries=spec.max_tries != 1,
        script_names=[s.name for s in spec.scripts],
        expected_sources=spec.threads,
    )
    run_lease.start()  # heartbeat and partial series, until pgbench has ended
    try:
        view = LiveView(console, total_s, plan.lead_in_s, env.name)

        def on_line(line: str) -> None:
            point = pgbench_output.parse_progress_line(line)
            if point is not None:
                progress_points.append(point)

        # The grid of whole seconds starts here, before pgbench's -T clock (analysis/window.py).
        stream.set_origin(int(time.time() * 1e6))
        follower = TxlogFollower(log_prefix, stream, art_dir if spec.keep_txlog else None)
        follower.start()
        proc = PgbenchProcess(
            argv,
            env={**without_libpq_vars(), **_client_env(env, spec, dbname)},
            cwd=work,
            stdout_path=work / "pgbench.stdout",
            on_stderr_line=on_line,
        )
        _track_client(os_sampler, proc.pid)
        ctx = view if live else contextlib.nullcontext(view)
        with ctx:
            while proc.running_after(1.0):
                p95 = stream.live()[1]  # of the latest whole second the log reader closed
                if live:
                    tps = progress_points[-1].tps if progress_points else None
                    view.update(tps=tps, p95_ms=p95)
                stopped = stop_if(p95) if stop_if is not None else None
                if stopped:
                    proc.interrupt()
                    break
        rc = proc.wait()
    except KeyboardInterrupt as stop:
        interrupted = guard.interruption(stop)
        rc = proc.interrupt() if proc else -2
    finally:
        run_lease.stop()
        if proc is not None:
            proc.ensure_dead()
        follow = follower.stop() if follower is not None else None  # reads the last lines
        series_raw = sampler.stop() if sampler else {}
        collection.stop()
        unpin()

    rec.ended_at = datetime.now(UTC)
    stdout = (work / "pgbench.stdout").read_text(errors="replace")
    stderr = "\n".join(proc.stderr_lines) if proc else ""
    (art_dir / "pgbench.stdout").write_text(stdout)
    (art_dir / "pgbench.stderr").write_text(stderr)
    rec.artifacts = {"pgbench.stdout": "pgbench.stdout", "pgbench.stderr": "pgbench.stderr"}

    completed = rc == 0 and not interrupted and not stopped
    if follow is not None:
        rec.extra["txlog"] = {
            **follow.as_dict(),
            "lines": stream.lines,
            "late_lines": stream.late_lines,
        }
        rec.artifacts.update(follow.kept)
        if follow.error:
            rec.extra["results_error"] = follow.error
    try:
        txlog = stream.finish(completed) if follow is not None and not follow.error else None
        results.fill_results(
            rec, spec, completed, txlog, stdout, stderr, progress_points, series_raw
        )
    except Exception as e:  # a broken log must not lose the run: keep what we have
        rec.extra["results_error"] = f"{type(e).__name__}: {e}"

    if interrupted:
        rec.status, rec.error = "aborted", interrupted
    elif stopped:
        rec.status, rec.error = "aborted", f"stopped early: {stopped}"
    elif rc != 0:
        rec.status = "failed"
        errs = pgbench_output.error_lines(stderr) or stderr.strip().splitlines()[-3:]
        rec.error = "; ".join(errs)[:2000] or f"pgbench exited with code {rc}"
    else:
        rec.status = "ok"

    _keep_server_log(rec, art_dir, env, server_log_offset)
    _pooler_results(rec, env, pooler_source, pooler_log_offsets, art_dir)
    collection.finish(rec, art_dir)
    # Stored relative to the artifacts root, so an archive stays valid if the home moves.
    rec.artifacts = {k: f"{rec.id}/{v}" for k, v in rec.artifacts.items()}
    _finish(rec, archive, console)
    if interrupted:
        raise RunInterrupted(rec)
    return rec


def _partial_series(rec: RunRecord, sampler: Sampler, points: list[Any]) -> dict[str, Any]:
    """The series gathered so far, as a lost run would keep them (load/lifecycle.py)."""
    out: dict[str, Any] = {"pgbench": results.progress_series(list(points), rec.warmup_s)}
    origin = results.sample_origin(rec)
    if origin is not None:
        for kind, cols in sampler.snapshot().items():
            kept = results.rebased(cols, origin)
            if kept is not None:
                out[kind] = kept
    return out


def _finish(rec: RunRecord, archive: Any, console: Console) -> None:
    """The run's last write; if the archive cannot take it, the record is spooled (and said)."""
    spooled = lifecycle.finish_or_spool(archive, rec)
    if spooled is not None:
        console.print(
            f"[yellow]warning:[/yellow] archive {escape(archive.url)} is unavailable: run "
            f"{rec.id} is saved in {escape(str(spooled))}; the next pgrig command imports it "
            f"(or `pgrig runs import {escape(str(spooled))}`)",
            highlight=False,
            soft_wrap=True,
        )


def _keep_server_log(rec: RunRecord, art_dir: Path, env: Environment, offset: int | None) -> None:
    if env.managed and offset is not None and env.logfile.exists():
        with open(env.logfile, "rb") as src:
            src.seek(offset)
            (art_dir / "server.log").write_bytes(src.read())
        rec.artifacts["server.log"] = "server.log"


def _log_size(env: Environment) -> int | None:
    try:
        return env.logfile.stat().st_size if env.managed else None
    except OSError:
        return None


def _start_sampler(
    env: Environment, conninfo: str, dbname: str, via: str = "direct"
) -> tuple[Sampler, OsSampler, PoolerSampler | None]:
    from pgrig.metrics.os_metrics import OsSampler, fixed_pids, pids_from_file
    from pgrig.metrics.pg_metrics import PgSampler
    from pgrig.metrics.sampler import Sampler

    os_sampler = OsSampler()
    # pgrig's own CPU (this sampler, the live view) is neither the benchmark nor a neighbour.
    os_sampler.track_processes("pgrig", fixed_pids(os.getpid()), children=False)
    if env.managed:
        os_sampler.track_processes("server", pids_from_file(env.datadir / "postmaster.pid"))
    pooler_source = None
    if via != "direct":  # pgbouncer's SHOW POOLS/STATS (series "pooler") and its CPU
        from pgrig.metrics.pooler_metrics import PoolerSampler
        from pgrig.provision import pooler

        pooler_source = PoolerSampler(pooler.console_params(env), dbname)
        os_sampler.track_processes("pooler", pooler.pids_callable(env), children=False)
    extra = [pooler_source] if pooler_source is not None else []
    sampler = Sampler(os_sampler, PgSampler(conninfo, dbname), extra=extra)
    sampler.start()
    return sampler, os_sampler, pooler_source


def _track_client(os_sampler: Any, pid: int) -> None:
    from pgrig.metrics.os_metrics import fixed_pids

    with contextlib.suppress(Exception):
        os_sampler.track_processes("pgbench", fixed_pids(pid), children=False)


def _separate_warmup(
    spec: RunRequest, env: Environment, dbname: str, pgbench: str, console: Console
) -> None:
    """With --transactions, the warm-up is its own timed pgbench run, never measured."""
    import subprocess

    warm = spec.model_copy(update={"transactions_per_client": None, "duration_s": spec.warmup_s})
    argv = pgbench_command.build_pgbench_command(  # empty log prefix: no per-transaction log
        pgbench, warm, log_prefix="", total_seconds=spec.warmup_s, progress=False
    )
    console.print(f"warm-up: {spec.warmup_s:g}s (not measured)")
    subprocess.run(
        _client_prefix(spec) + argv,
        env={**without_libpq_vars(), **_client_env(env, spec, dbname)},
        capture_output=True,
        check=False,
        preexec_fn=die_with_parent,  # never outlives a killed pgrig (load/process.py)
    )


def _pgbench_version(pgbench: str) -> str:
    version = pgbench_command.pgbench_version(pgbench)  # cached: the command builder asks too
    if version is None:
        raise PgrigError(f"cannot run pgbench ({pgbench})")
    return version


def _layers(env: Environment, spec: RunRequest) -> dict[str, dict[str, str]]:
    from pgrig.provision import insights_layer

    return {
        "insights": insights_layer.settings(env),
        "profile": {"__name__": env.profile, **env.profile_settings},
        "environment": dict(env.settings),
        "run": {**({"__profile__": spec.profile} if spec.profile else {}), **spec.settings},
    }


def _owner() -> str:
    with contextlib.suppress(Exception):
        return os.environ.get("PGRIG_OWNER") or getpass.getuser()
    return "unknown"


# --- connection target, pooler and CPU pinning (see provision/pooler.py, load/pinning.py) -------


def _check_connection(spec: RunRequest, env: Environment) -> str:
    """Everything about where pgbench connects that can fail, checked before anything starts:
    via/connect, max_connections (direct) or the pooler's limits, CPU lists, open files.
    Starts the pooler when it is down. Returns the normalized via ("direct", "pgbouncer")."""
    from pgrig.load import pinning
    from pgrig.provision import pooler

    _placement(spec)  # CPU lists and counts checked against this machine
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


def _client_env(env: Environment, spec: RunRequest, dbname: str) -> dict[str, str]:
    from pgrig.provision import pooler

    return pooler.client_env(env, dbname, spec.via, spec.connect)


def _placement(spec: RunRequest) -> Placement:
    """The CPUs of each side (--server-cpus/--client-cpus: lists, or counts resolved here)."""
    from pgrig.load import pinning

    return pinning.placement(spec.server_cpus, spec.client_cpus)


def _client_prefix(spec: RunRequest) -> list[str]:
    from pgrig.load import pinning

    return pinning.client_prefix(_placement(spec).client)


def _pin_server(env: Environment, spec: RunRequest) -> Callable[[], None]:
    """Pin the server's processes, and the pooler's on the same CPUs, for the run; returns
    the function that unpins them."""
    from pgrig.provision import pooler, postmaster

    cpus = _placement(spec).server
    root = postmaster.pid(env) if cpus and env.managed else None
    if not cpus or root is None:
        return lambda: None
    roots = [root] + (pooler.pids(env) if spec.via != "direct" else [])
    return guard.pin_journaled(env, roots, cpus)


def _connection_extra(env: Environment, spec: RunRequest) -> dict[str, Any]:
    """What the archive keeps about the connection path and CPU placement of a run."""
    from pgrig.load import pinning
    from pgrig.provision import pooler

    out: dict[str, Any] = {"connection": {"via": spec.via, "connect": spec.connect}}
    cpus = {
        side: pinning.format_cpus(chosen)
        for side, chosen in _placement(spec).sides(spec.via).items()
    }
    if cpus:
        out["cpus"] = cpus
    if spec.via != "direct" and (cfg := pooler.config_of(env)) is not None:
        out["pooler"] = {
            **cfg.as_dict(),
            "version": pooler.version(),
            "nofile": cfg.nofile,
            "target": f"postgresql://{cfg.user}@127.0.0.1:{cfg.port}/",
        }
    return out


def _pooler_log_offsets(env: Environment, spec: RunRequest) -> list[int]:
    from pgrig.provision import pooler

    return pooler.log_offsets(env) if spec.via != "direct" else []


def _pooler_results(
    rec: RunRecord, env: Environment, source: Any, offsets: list[int], art_dir: Path
) -> None:
    """The pooler's totals over the run and what it logged meanwhile (artifact pooler.log)."""
    if source is None:
        return
    from pgrig.provision import pooler

    with contextlib.suppress(Exception):
        source.sample()  # a last look after pgbench ended, so the totals cover the whole run
        source.close()
        rec.extra.setdefault("pooler", {})["totals"] = source.summary()
    with contextlib.suppress(Exception):
        text = pooler.log_since(env, offsets)
        if text:
            (art_dir / "pooler.log").write_text(text)
            rec.artifacts["pooler.log"] = "pooler.log"
