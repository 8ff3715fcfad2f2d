"""The run orchestrator: one run prepared, recorded, measured and archived whatever happens.

Order of events (each step recorded in the RunRecord):
  validate inputs -> resolve scripts -> apply per-run settings -> CHECKPOINT -> snapshot settings,
  versions, host -> archive row "running" -> the load (measure_here.py; multi_runner.py with
  load hosts) -> archive row "ok"/"failed"/"aborted".
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rich.console import Console

from pgrig import __version__
from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError, first_line
from pgrig.format import pgrig_command
from pgrig.load.core import (
    guard,
    left_backends,
    lifecycle,
    prewarm,
    run_steps,
)
from pgrig.load.core.preflight import (
    check_connection,
    check_scripts,
    check_sysbench_data,
    check_tables,
)
from pgrig.load.core.run_context import PreparedRun, ServerFacts
from pgrig.load.core.run_steps import RunInterrupted, StopIf
from pgrig.load.engines import command as pgbench_command
from pgrig.load.engines import engine_choice, work_dirs
from pgrig.provision.state.environment import (
    DEFAULT_DATABASE,
    Environment,
    require_managed,
    without_libpq_vars,
)
from pgrig.record.documents import (
    DatasetDoc,
    DiskLimitDoc,
    PoolerDoc,
    PrewarmDoc,
    RunExtra,
    SettingDoc,
)
from pgrig.record.protocol import RunStore
from pgrig.request import RunRequest, load_values

if TYPE_CHECKING:
    import psycopg

    from pgrig.load.engines.driver import LoadDriver
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
    import psycopg

    since = time.time()
    with guard.holding(env, console) as lock:  # one run per environment; a dead run undone
        try:
            return _execute(spec, env, lock, archive, console, live, stop_if)
        except psycopg.Error as e:  # e.g. `env restart --force` under the run's set-up
            raise PgrigError(_session_failed(env, lock, since, e)) from e


def _session_failed(env: Environment, lock: EnvLock, since: float, e: BaseException) -> str:
    """Why the run's own session broke, as far as pgrig knows it: what was forced on the
    environment meanwhile (its notes; an environment destroyed takes them with it) and
    whether the run was archived (its lock names the run once begun)."""
    from pgrig.provision.state import env_lock

    forced = [
        f"`pgrig {n.get('command')}` ({n.get('change')})"
        for n in env_lock.forced_between(env.dir, since, time.time())
    ]
    if not forced and not (env.dir / "env.json").exists():
        forced = [f"{env.name} was destroyed"]
    cause = f" after {'; '.join(forced)} under it" if forced else ""
    archived = f"run {lock.run_id} is archived as failed" if lock.run_id else "nothing was archived"
    return (
        f"the run's session on {env.name} failed{cause} ({first_line(e, named=True)}): {archived}"
    )


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
    server = _server_facts(env, dbname, mark)
    check_connection(spec, env)  # pooler, limits, pinning: before anything starts
    if spec.load_from:
        from pgrig.load.core import multi_runner

        multi_runner.check_targets(spec, env, dbname)
    work = work_dirs.work_dir()
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
        run_settings = {**_profile_settings(spec.profile, env, server.major), **spec.settings}
        restore = _apply_run_settings(env, run_settings)
        try:
            prepared = PreparedRun(
                spec=spec,
                env=env,
                dbname=dbname,
                conninfo=conninfo,
                work=work,
                archive=archive,
                console=console,
                live=live,
                stop_if=stop_if,
                server=server,
                dataset=scenario_info,
                lock=lock,
            )
            return _run(prepared)
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


def _server_facts(
    env: Environment, dbname: str, mark: tuple[list[int], float] | None
) -> ServerFacts:
    from pgrig.metrics import pg_snapshot
    from pgrig.workloads import database

    with database.connect(env, "postgres") as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname=%s", (dbname,)).fetchone():
            raise PgrigError(
                f"database {dbname!r} does not exist in {env.name}: "
                f"run `{pgrig_command('db', 'generate', env.name, '--db', dbname, rest='...')}` "
                "first"
            )
        full, major, _num = pg_snapshot.server_version(conn)
    return ServerFacts(version=full, major=major, cpu_mark=mark)


def _resolve_scripts(
    spec: RunRequest, env: Environment, dbname: str, work: Path
) -> tuple[RunScripts, DatasetDoc]:
    """What the run executes, from its scenario (workloads/scenario.py), and the dataset the
    database holds (a partial one is refused)."""
    from pgrig.workloads import datasets, scenario

    info: DatasetDoc = datasets.usable(env, dbname) or {}
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
    require_managed(env, "change its configuration for a run (--set, --profile)")
    from pgrig.provision import run_settings

    return run_settings.apply_run_settings(env, settings)


@dataclass(frozen=True)
class _Found:
    """What the run found on the server just before its record: the live state put back (if
    it was not what the record will say), the disk limit, the cache warmed, the settings and
    the database's size after a CHECKPOINT."""

    restored: list[str]
    disk: DiskLimitDoc | None
    warmed: PrewarmDoc | None
    settings: dict[str, SettingDoc]
    db_size: int | None


def _run(run: PreparedRun) -> RunRecord:
    """The run's load engine, its record, its row; then its load (here or on load hosts)."""
    from pgrig.metrics import pg_snapshot
    from pgrig.workloads import database

    spec, env = run.spec, run.env
    driver = engine_choice.for_request(
        spec,
        env,
        run.work,
        client_env={
            **without_libpq_vars(),
            **run_steps.client_env(env, spec, run.dbname),
            # the client's sessions, by name: those left on the server are ended at the end
            "PGAPPNAME": left_backends.session_name(_engine_name(spec)),
        },
        prefix=run_steps.client_prefix(spec),
        dataset=run.dataset,
        archive=run.archive,  # the expected rate of --txlog auto (load/engines/txlog_mode.py)
    )
    engine_version = driver.version()  # fails here, before anything is archived

    restored = guard.verify_live(env, run.console)  # the server is what the record will say
    disk = _disk_limit(env)  # the kernel's truth about the disk limit, before the record
    with database.connect(env, run.dbname) as conn:
        warmed = prewarm.prewarm(conn) if spec.prewarm else None
        _checkpoint(conn, run.console, disk)
        found = _Found(
            restored=restored,
            disk=disk,
            warmed=warmed,
            settings=pg_snapshot.settings_snapshot(conn),
            db_size=pg_snapshot.database_size(conn, run.dbname),
        )
    rec = _record(run, driver, engine_version, found)
    try:
        lifecycle.begin(run.archive, rec)  # from here the run must end, however pgrig is stopped
        if run.lock is not None:
            run.lock.describe(rec.id)  # a refused second run names this one
        ctx = run.begun(rec)
        if spec.load_from:  # pgbench on load hosts, logs merged (load/core/multi_runner.py)
            from pgrig.load.core import multi_runner

            return multi_runner.measure(
                ctx, env.binary("pgbench"), driver if driver.engine == "sysbench" else None
            )
        from pgrig.load.core import measure_here  # its results and txlog parsing: numpy, polars

        return measure_here.measure(ctx, driver)
    except RunInterrupted:
        raise
    except KeyboardInterrupt as stop:
        # Ctrl-C or SIGTERM outside pgbench's own span (insights starting, results being
        # written): the run still ends "aborted", never "running" (later "lost").
        if rec.id is None:  # stopped before its row was written: nothing to end
            raise
        if _still_running(run.archive, rec):
            rec.status, rec.ended_at = "aborted", rec.ended_at or datetime.now(UTC)
            rec.error = guard.interruption(stop)
            run_steps.end_anyway(rec, run.archive, run.console)
        raise RunInterrupted(rec) from None
    except BaseException as e:
        # Whatever broke after the row was written, the run ends as "failed", never "running".
        if rec.id is not None and rec.status == "running":
            rec.status, rec.ended_at = "failed", datetime.now(UTC)
            rec.error = f"pgrig: {type(e).__name__}: {e}"[:2000]
            run_steps.end_anyway(rec, run.archive, run.console)
        raise


def _engine_name(spec: RunRequest) -> str:
    return "sysbench" if spec.is_sysbench else "tpch" if spec.is_tpch else "pgbench"


def _record(run: PreparedRun, driver: LoadDriver, engine_version: str, found: _Found) -> RunRecord:
    """The run's record as its row is begun: the request, the server, the host, the dataset,
    what the run found on the server, and the warnings about it."""
    from pgrig.machine.facts import host_facts

    spec, env, server = run.spec, run.env, run.server
    assert server is not None  # _execute found it
    rec = RunRecord(
        **load_values(spec),
        env_name=env.name,
        started_at=datetime.now(UTC),
        study=spec.study,
        study_point=spec.study_point,
        repeat=spec.repeat,
        managed=env.kind != "external",  # pgrig made the server, here or on another host
        target=env.masked_target(),
        server_version=server.version,
        server_major=server.major,
        pgbench_version=engine_version if driver.engine == "pgbench" else None,
        database=run.dbname,
        scenario=spec.scenario or run.dataset.get("scenario"),
        scale=run.dataset.get("scale") or run.dataset.get("warehouses"),
        db_size_bytes=found.db_size,
        note=spec.note,
        owner=run_steps.owner(),
        tags=dict(spec.tags),
        settings=found.settings,
        settings_layers=_layers(env, spec),
        disk_limit=found.disk,
        host=host_facts(
            env.datadir if env.managed else None,
            clients=spec.clients,
            cpus=run_steps.placement(spec).sides(spec.via),
            cpu_since=server.cpu_mark,
        ),
        extra={
            "pgrig_version": __version__,
            "dataset": run.dataset,
            "load_engine": {"name": driver.engine, "version": engine_version},
        },
    )
    rec.txlog = driver.txlog_mode  # the mode used, not "auto"
    # a change forced since the run took its environment: the settings just read may be it
    run_steps.forced_changes(rec, since=run.lock.since if run.lock is not None else None)
    if env.kind == "remote" and env.on:
        rec.extra["server_on"] = env.on
    rec.extra.update(_connection_extra(env, spec))
    if env.replicas:
        from pgrig.load.core import topology

        rec.extra["topology"] = topology.describe(env)
    if found.restored:
        rec.extra["restored_before_run"] = found.restored
    disk = found.disk
    if disk is not None and disk.get("in_force") is False:
        problems = "; ".join(disk.get("problems", []))
        rec.add_warning(
            "disk_limit", f"the disk limit {disk.get('text')} was not in force: {problems}"
        )
    if found.warmed is not None:
        rec.extra["prewarm"] = found.warmed
        if "skipped" in found.warmed:
            rec.add_warning("no_prewarm", f"the cache was not warmed: {found.warmed['skipped']}")
    return rec


def _still_running(archive: RunStore, rec: RunRecord) -> bool:
    """Whether the archive still has the run as "running" (its last write not yet made)."""
    if rec.status == "running" or rec.id is None:
        return True
    try:
        return bool(archive.get_run(rec.id).status == "running")
    except Exception:
        return True


# how long the checkpoint before a run may take unsaid (most take well under a second)
CHECKPOINT_QUIET_S = 2.0


def _checkpoint(conn: psycopg.Connection, console: Console, disk: DiskLimitDoc | None) -> None:
    """The CHECKPOINT before the measured window; one that takes longer than CHECKPOINT_QUIET_S
    is said while it lasts (under a disk limit it writes the dirty pages at the limit's pace:
    33 s unsaid at wiops=30 after a `db generate`, minutes with more left dirty)."""
    import threading

    from pgrig.metrics import pg_snapshot

    limit = (
        f" (its writes under the disk limit {disk['text']})" if disk and disk.get("limit") else ""
    )

    def say() -> None:
        console.print(
            f"· waiting for the checkpoint before the run to write the dirty pages{limit}",
            highlight=False,
            soft_wrap=True,
        )

    timer = threading.Timer(CHECKPOINT_QUIET_S, say)
    timer.daemon = True
    timer.start()
    try:
        pg_snapshot.checkpoint(conn)
    finally:
        timer.cancel()


def _disk_limit(env: Environment) -> DiskLimitDoc | None:
    """What the kernel holds of the environment's disk limit (provision/server/disk_throttle):
    a limit found not in force (its cgroup changed behind pgrig) is put back once and read
    again; None for servers pgrig does not run here."""
    if not env.managed:
        return None
    from pgrig.provision.server import disk_throttle, postmaster

    try:
        disk_throttle.limit_of(env)
    except PgrigError as e:  # said as the flag's error, it blamed a --disk-limit never given
        raise PgrigError(
            f"{env.name}: the disk limit recorded in its env.json is damaged ({e}); nothing "
            f"was run: `{pgrig_command('env', 'repair', env.name)}` rebuilds it from what the "
            f"kernel holds, `{pgrig_command('env', 'set', env.name, '--disk-limit', 'none')}` "
            "removes it"
        ) from None
    doc = disk_throttle.in_force(env, postmaster.pid(env))
    if doc.get("in_force") is False:
        disk_throttle.apply(env, postmaster.pid(env))
        found = doc.get("problems", [])
        doc = disk_throttle.in_force(env, postmaster.pid(env))
        doc["reapplied_because"] = found
    return doc


def _layers(env: Environment, spec: RunRequest) -> dict[str, dict[str, str]]:
    from pgrig.provision.settings import insights_layer, topology_layer

    return {
        "insights": insights_layer.settings(env),
        "topology": topology_layer.settings(env),
        "profile": {"__name__": env.profile, **env.profile_settings},
        "environment": dict(env.settings),
        "run": {**({"__profile__": spec.profile} if spec.profile else {}), **spec.settings},
    }


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
