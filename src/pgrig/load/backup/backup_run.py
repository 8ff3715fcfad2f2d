"""Backup and restore benchmarks, archived like runs (workload "backup:<what>").

    backup:basebackup-full | backup:basebackup-incremental      pg_basebackup (provision/basebackup)
    backup:pgbackrest-full | -diff | -incr                       pgBackRest (provision/pgbackrest)
    backup:restore        the latest backup into a scratch server, started and verified

A backup run is a RunRecord with no clients: `measured_s` is the backup's duration, the figures
(duration, throughput, sizes, compression ratio, start/stop LSN, WAL during the backup) are
`extra["backup"]`, the host and server are sampled every second meanwhile (series "os", "pg").
Bad input (no full backup to build on, summarize_wal off, pgBackRest missing) is refused before
anything is archived; a tool that fails (a full disk) gives a "failed" run with what was
measured, its partial backup removed and never catalogued; Ctrl-C gives "aborted".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from rich.console import Console
from rich.markup import escape

from pgrig import __version__
from pgrig.archive.records import RunRecord, RunStatus
from pgrig.errors import PgrigError, first_line, is_interruption
from pgrig.format import pgrig_command
from pgrig.load.core import guard, lifecycle, run_steps
from pgrig.metrics.sampler import Sampler
from pgrig.provision.state.environment import Environment, require_managed
from pgrig.record.documents import BackupDoc, DatasetDoc
from pgrig.record.protocol import RunStore
from pgrig.record.run import RunSeries

PREFIX = "backup:"
WHATS = (
    "basebackup-full",
    "basebackup-incremental",
    "pgbackrest-full",
    "pgbackrest-diff",
    "pgbackrest-incr",
    "restore",
)


def is_backup(workloads: list[str]) -> bool:
    return any(w.startswith(PREFIX) for w in workloads)


def check_flags(workloads: list[str], during: str | None, backup_dir: str | None) -> None:
    """`--during` and `--backup-dir` go with a backup workload only."""
    if during is not None and not is_backup(workloads):
        raise PgrigError("--during needs a backup workload (--workload backup:...)")
    if backup_dir is not None and not is_backup(workloads):
        raise PgrigError("--backup-dir needs a backup workload (--workload backup:...)")
    if backup_dir is not None and not backup_dir.strip():  # `--backup-dir "$UNSET"`
        raise PgrigError(
            "--backup-dir is empty: give a directory, or leave the flag out for the "
            "environment's own (the backups would otherwise go there unasked)"
        )


@dataclass
class BackupRequest:
    env_name: str
    what: str  # one of WHATS
    backup_dir: str | None = None
    database: str | None = None
    note: str | None = None
    tags: dict[str, str] | None = None
    study: str | None = None
    study_point: str | None = None
    repeat: int = 0

    @property
    def workload(self) -> str:
        return PREFIX + self.what


def parse(workloads: list[str]) -> str:
    """The backup a --workload list asks for (exactly one backup:<what>, nothing else)."""
    if len(workloads) != 1:
        raise PgrigError("a backup run takes exactly one --workload backup:<what>")
    what = workloads[0][len(PREFIX) :]
    if what not in WHATS:
        raise PgrigError(
            f"unknown backup workload {workloads[0]!r}: use " + ", ".join(PREFIX + w for w in WHATS)
        )
    return what


def precheck(env: Environment, what: str, backup_dir: str | None = None) -> None:
    """Bad input, refused before anything is archived or changed (a backup directory the
    server user cannot write to included: made here, it is where the backup goes)."""
    from pgrig.provision.server import backups, basebackup, pgbackrest

    require_managed(env, "back it up in a backup run")
    if what != "restore":
        backups.root(env, backup_dir)
    if what == "basebackup-incremental":
        basebackup.check_incremental(env)
    elif what.startswith("pgbackrest-"):
        pgbackrest.check(env, what.split("-", 1)[1])
    elif what == "restore" and backups.latest(env) is None:
        raise PgrigError(
            f"{env.name} has no backup to restore: run "
            f"`{pgrig_command('run', env.name, '--workload', 'backup:basebackup-full')}` "
            "(or backup:pgbackrest-full) first"
        )


def prepare(env: Environment, req: BackupRequest, console: Console) -> None:
    """Refuse bad input, then set up what the backup needs but is not part of it (pgBackRest's
    stanza and WAL archiving: a restart of the primary the first time), before any run."""
    precheck(env, req.what, req.backup_dir)
    if req.what.startswith("pgbackrest-"):
        from pgrig.provision.server import pgbackrest

        pgbackrest.ensure_stanza(
            env, req.backup_dir, lambda m: console.print(f"[dim]·[/dim] {m}", highlight=False)
        )


def execute(
    req: BackupRequest,
    *,
    archive: RunStore,
    console: Console | None = None,
    hold_lock: bool = True,
) -> RunRecord:
    """Take (or restore) one backup and archive the run. `hold_lock=False` when a load run on
    the same environment holds it (--during: the backup runs inside that run)."""
    from pgrig.provision import cluster
    from pgrig.provision.server import backups

    console = console or Console(stderr=True)
    env = Environment.load(req.env_name)
    for line in backups.recover_interrupted(env):  # what a killed pgrig's backup left
        console.print(f"[yellow]note:[/yellow] {escape(line)}", highlight=False, soft_wrap=True)
    env.check_intact()
    cluster.ensure_running(env)
    prepare(env, req, console)
    if not hold_lock:
        return _execute(req, env, archive, console)
    with guard.holding(env, console):
        return _execute(req, env, archive, console)


def _execute(
    req: BackupRequest, env: Environment, archive: RunStore, console: Console
) -> RunRecord:
    run = BackupRun(req, env, archive, console)
    try:
        run.begin()
        run.perform()
        return run.finish()
    except BaseException as stop:  # a signal between the steps: the row still ends
        run.end_early(stop)
        raise


class BackupRun:
    """One backup run in three steps: begin (archived "running"), perform (the tool, sampled;
    never raises but KeyboardInterrupt), finish (archived with its status). --during performs
    in a thread while the load runs and finishes once the load's figures are known."""

    def __init__(self, req: BackupRequest, env: Environment, archive: RunStore, console: Console):
        self.req, self.env, self.archive, self.console = req, env, archive, console
        self.dbname = req.database or env.default_database
        self.figures: BackupDoc = {}
        self.t0 = self.t1 = 0.0
        self.rec: RunRecord | None = None
        self.interrupted = False
        self.datasets: dict[str, DatasetDoc] = {}  # the data when the backup began
        self.stored = False  # its last write made (archived or spooled)

    def begin(self) -> RunRecord:
        from pgrig.machine.facts import host_facts
        from pgrig.metrics import pg_snapshot
        from pgrig.workloads import database, datasets

        env, req = self.env, self.req
        with database.connect(env, "postgres") as conn:
            full, major, _num = pg_snapshot.server_version(conn)
            settings = pg_snapshot.settings_snapshot(conn)
        # the data a run is about: the data now for a backup (recorded with it), the restored
        # backup's own for a restore (the environment's may have been regenerated since)
        self.datasets = datasets.load_all(env)
        held = self.datasets
        if req.what == "restore":
            from pgrig.provision.server import backups

            last = backups.latest(env)
            held = (last.datasets if last is not None else None) or {}
        info = held.get(self.dbname) or {}
        rec = RunRecord(
            env_name=env.name,
            workload=req.workload,
            clients=0,
            threads=0,
            started_at=datetime.now(UTC),
            study=req.study,
            study_point=req.study_point,
            repeat=req.repeat,
            managed=True,
            target=env.masked_target(),
            server_version=full,
            server_major=major,
            database=self.dbname,
            scenario=info.get("scenario"),
            scale=info.get("scale") or info.get("warehouses"),
            note=req.note,
            owner=run_steps.owner(),
            tags=dict(req.tags or {}),
            settings=settings,
            host=host_facts(env.datadir),
            extra={"pgrig_version": __version__, "dataset": info},
        )
        self.rec = rec
        lifecycle.begin(self.archive, rec)  # a signal meanwhile comes once the id is known
        return rec

    def perform(self) -> None:
        from pgrig.archive import artifacts

        rec = self.rec
        assert rec is not None and rec.id is not None
        art_dir = artifacts.run_artifacts_dir(rec.id, archive=self.archive.url)
        art_dir.mkdir(parents=True, exist_ok=True)
        sampler = _start_sampler(self.env, self.dbname)
        self.t0 = time.time()
        t0 = self.t0
        run_lease = lifecycle.RunLease(self.archive, rec, art_dir, lambda: _series(sampler, t0))
        run_lease.start()
        try:
            self.figures = _do(self.req, self.env, self.dbname, self.console, self.datasets)
            rec.status = "ok"
        except KeyboardInterrupt as stop:
            rec.status, rec.error = "aborted", guard.interruption(stop)
            self.interrupted = True
        except PgrigError as e:
            from pgrig.provision.server.basebackup import BackupFailed

            rec.status, rec.error = "failed", str(e)[:2000]
            self.figures = e.figures.copy() if isinstance(e, BackupFailed) else {}
        except BaseException as e:
            rec.status, rec.error = "failed", f"pgrig: {type(e).__name__}: {e}"[:2000]
        finally:
            self.t1 = time.time()
            run_lease.stop()
            rec.series = _rebased(sampler.stop(), t0)

    def finish(self) -> RunRecord:
        rec, figures = self.rec, self.figures
        assert rec is not None
        rec.ended_at = datetime.now(UTC)
        rec.measured_s = figures.get("duration_s") or figures.get("restore_total_s")
        rec.duration_s = rec.measured_s
        figures["started_at"] = datetime.fromtimestamp(self.t0, UTC).isoformat(timespec="seconds")
        figures["ended_at"] = datetime.fromtimestamp(self.t1, UTC).isoformat(timespec="seconds")
        rec.extra["backup"] = figures
        rec.db_size_bytes = figures.get("source_bytes")
        self._store()
        if self.interrupted:
            raise KeyboardInterrupt
        return rec

    def end_early(self, stop: BaseException) -> None:
        """The row ended when the backup stopped outside its tool's span (a signal between
        begin and perform, or the load it ran during interrupted or failed): its own outcome if
        it has one, else "aborted" for an interruption and "failed" for an error; never left
        "running" (later "lost", for a reason that is not the real one)."""
        rec = self.rec
        if rec is None or rec.id is None or self.stored:
            return
        if rec.status == "running":
            rec.status, rec.error = _early_end(stop)
        rec.ended_at = rec.ended_at or datetime.now(UTC)
        rec.extra.setdefault("backup", self.figures.copy())
        run_steps.end_anyway(rec, self.archive, self.console)
        self.stored = True

    def _store(self) -> None:
        assert self.rec is not None
        run_steps.finish(self.rec, self.archive, self.console)  # archived, or spooled and said
        self.stored = True


def _early_end(stop: BaseException) -> tuple[RunStatus, str]:
    """The status and reason of a backup run stopped by `stop` before its own end."""
    if isinstance(stop, KeyboardInterrupt):
        return "aborted", guard.interruption(stop)
    if is_interruption(stop):  # the load it ran during, aborted and archived
        record = getattr(stop, "record", None)
        return "aborted", (getattr(record, "error", None) or "the load it ran during stopped")
    return "failed", f"pgrig: {type(stop).__name__}: {first_line(stop)}"[:2000]


def _do(
    req: BackupRequest,
    env: Environment,
    dbname: str,
    console: Console,
    datasets: dict[str, DatasetDoc],
) -> BackupDoc:
    from pgrig.provision.server import basebackup, pgbackrest

    def say(msg: str) -> None:
        console.print(f"[dim]·[/dim] {msg}", highlight=False)

    what = req.what
    if what.startswith("basebackup-"):
        kind = what.split("-", 1)[1]
        say(f"pg_basebackup ({kind}) of {env.name}")
        return basebackup.take(env, kind, req.backup_dir, datasets)
    if what.startswith("pgbackrest-"):
        kind = what.split("-", 1)[1]
        say(f"pgBackRest {kind} backup of {env.name}")
        return pgbackrest.take(env, kind, req.backup_dir, say, datasets)
    return _restore(env, dbname, say)


def _restore(env: Environment, dbname: str, say: Callable[[str], None]) -> BackupDoc:
    from pgrig.load.backup import backup_verify
    from pgrig.provision.server import backups, restore
    from pgrig.provision.server.basebackup import BackupFailed

    figures: BackupDoc = {"tool": "restore", "type": "restore"}
    try:
        with restore.scratch_server(env, figures) as scratch:
            say(
                f"restored {figures['backup']} ({figures['tool']}) in {figures['restore_s']:.1f} s"
                f", started on port {scratch.port} in {figures['start_s']:.1f} s; verifying"
            )
            restored = backups.named(env, figures["backup"])
            held = restored.datasets if restored is not None else None
            figures["verify"] = backup_verify.verify(held, scratch)
    except PgrigError as e:
        raise BackupFailed(str(e), figures) from None
    figures["tool"] = f"restore ({figures.get('tool')})" if "backup" in figures else "restore"
    figures["duration_s"] = figures.get("restore_total_s")
    if not figures["verify"]["ok"]:
        problem = figures["verify"]["problem"]
        raise BackupFailed(f"the restored server did not verify: {problem}", figures)
    return figures


# --- sampling during the backup -----------------------------------------------------------------


def _start_sampler(env: Environment, dbname: str) -> Sampler:
    """The run's samplers (load/core/run_steps.py), the backup's tools counted as pgrig's."""
    sampler, _os, _pooler = run_steps.start_sampler(
        env, env.conninfo(dbname), dbname, pgrig_children=True
    )
    return sampler


def _rebased(raw: RunSeries, t0: float) -> RunSeries:
    out: RunSeries = {}
    for kind, cols in raw.items():
        cols = dict(cols)
        ts = cols.pop("ts", None)
        if ts:
            out[kind] = {"t": [None if x is None else round(x - t0, 3) for x in ts], **cols}
    return out


def _series(sampler: Sampler, t0: float) -> RunSeries:
    return _rebased(sampler.snapshot(), t0)
