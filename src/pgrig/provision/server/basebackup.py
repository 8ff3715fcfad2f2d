"""pg_basebackup: full and incremental (PostgreSQL 17+) backups of a managed environment.

A backup is plain format (`-Fp`, what pg_combinebackup reads), WAL streamed alongside (`-X
stream`, self-contained) after a fast checkpoint (`-c fast`, no wait for a spread one). An
incremental backup (`--incremental=PREVIOUS/backup_manifest`) builds on the environment's latest
complete pg_basebackup backup and needs summarize_wal = on. Figures come from what the backup
wrote (its backup_manifest: the WAL range Start-LSN..End-LSN) and from the server (its size,
pg_current_wal_lsn() before and after). A failed backup is removed: it is never catalogued.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from psycopg.conninfo import make_conninfo
from typing_extensions import TypedDict

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision.server import backups
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import BackupDoc, DatasetDoc

INCREMENTAL_MAJOR = 17


class BackupFailed(PgrigError):
    """The backup tool failed; `figures` holds what was measured until then."""

    def __init__(self, message: str, figures: BackupDoc) -> None:
        super().__init__(message)
        self.figures = figures


def lsn_bytes(lsn: str) -> int:
    """A WAL location "X/Y" as a byte position (pg_wal_lsn_diff of two is their difference)."""
    hi, lo = lsn.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


class ServerState(TypedDict):
    """What a backup's figures need from the server at its start and end (server_state)."""

    wal_lsn: str  # pg_current_wal_lsn()
    databases_bytes: int
    summarize_wal: str | None  # None: no such setting (before PostgreSQL 17)
    wal_bytes: int | None  # pg_stat_wal's (14+)


def server_state(env: Environment) -> ServerState:
    """What a backup's figures need from the server now: WAL position, size, summarize_wal."""
    import psycopg

    # pg_stat_wal (14+): the WAL records written, which a segment switch's padding is not
    wal_bytes = ", (SELECT wal_bytes FROM pg_stat_wal)::bigint" if (env.major or 0) >= 14 else ""
    try:
        with psycopg.connect(env.conninfo("postgres"), autocommit=True) as conn:
            row = conn.execute(
                "SELECT pg_current_wal_lsn()::text, "
                "(SELECT sum(pg_database_size(oid)) FROM pg_database)::bigint, "
                "current_setting('summarize_wal', true)" + wal_bytes
            ).fetchone()
    except psycopg.Error as e:
        raise PgrigError(f"cannot connect to {env.name}: {str(e).strip()}") from None
    assert row is not None
    return {
        "wal_lsn": row[0], "databases_bytes": int(row[1] or 0), "summarize_wal": row[2],
        "wal_bytes": int(row[3]) if len(row) > 3 and row[3] is not None else None,
    }  # fmt: skip


WAL_RECORDS = "records written, pg_stat_wal: no segment-switch padding"
WAL_LSN = "LSN advance, with segment-switch padding: pg_stat_wal needs PostgreSQL 14"


def wal_figures(before: ServerState, after: ServerState) -> BackupDoc:
    """The WAL the server wrote during a backup, and what that figure is. The LSN advance
    counts the padding of the segment switch a backup forces (16 MiB on an idle server whose
    records were 248 bytes): it is kept apart, the figure is pg_stat_wal's where there is one."""
    advance = lsn_bytes(after["wal_lsn"]) - lsn_bytes(before["wal_lsn"])
    out: BackupDoc = {"wal_lsn_after": after["wal_lsn"], "wal_lsn_advance_bytes": advance}
    written, was = after["wal_bytes"], before["wal_bytes"]
    if was is not None and written is not None:
        out["wal_generated_bytes"] = written - was
        out["wal_generated_what"] = WAL_RECORDS
    else:
        out["wal_generated_bytes"] = advance
        out["wal_generated_what"] = WAL_LSN
    return out


def check_incremental(env: Environment) -> backups.Backup:
    """The backup an incremental one builds on, or a clear error saying what is missing."""
    if (env.major or 0) < INCREMENTAL_MAJOR:
        raise PgrigError(
            f"incremental backups need PostgreSQL {INCREMENTAL_MAJOR} or later "
            f"({env.name} runs {env.version})"
        )
    state = server_state(env)
    if state["summarize_wal"] != "on":
        raise PgrigError(
            "incremental backups need summarize_wal = on: "
            f"`{pgrig_command('env', 'set', env.name, 'summarize_wal=on')}`, then a full backup "
            "(backup:basebackup-full) to build on"
        )
    parent = backups.latest(env, "basebackup")
    if parent is None:
        raise PgrigError(
            f"no full backup of {env.name} to build on: run "
            f"`{pgrig_command('run', env.name, '--workload', 'backup:basebackup-full')}` first"
        )
    if not (Path(parent.path) / "backup_manifest").is_file():
        raise PgrigError(
            f"the previous backup {parent.path} has no backup_manifest: take a full backup again"
        )
    return parent


def take(
    env: Environment,
    kind: str,
    backup_dir: str | None = None,
    datasets: dict[str, DatasetDoc] | None = None,
) -> BackupDoc:
    """Take a `kind` ("full" or "incremental") backup; returns its figures (and catalogues it,
    with `datasets`: the data it holds). Raises BackupFailed (nothing catalogued, the partial
    backup removed) when the tool fails."""
    parent = check_incremental(env) if kind == "incremental" else None
    root = backups.root(env, backup_dir)
    name = backups.next_name(env, "basebackup", kind)
    dest = root / name
    before = server_state(env)
    argv = [
        env.binary("pg_basebackup"),
        "-D", str(dest),
        "-d", make_conninfo(
            "", host=env.host, port=env.port, user=env.user, application_name="pgrig_backup"
        ),
        "-Fp", "-X", "stream", "-c", "fast", "-w",
    ]  # fmt: skip
    if parent is not None:
        argv += ["--incremental", str(Path(parent.path) / "backup_manifest")]
    figures: BackupDoc = {
        "tool": "pg_basebackup",
        "type": kind,
        "name": name,
        "path": str(dest),
        "parent": parent.name if parent else None,
        "source_bytes": before["databases_bytes"],
        "wal_lsn_before": before["wal_lsn"],
    }
    with backups.in_progress(env, dest, "pg_basebackup backup"):  # until catalogued
        return _take(env, kind, argv, dest, root, parent, before, figures, datasets)


def _take(
    env: Environment,
    kind: str,
    argv: list[str],
    dest: Path,
    root: Path,
    parent: backups.Backup | None,
    before: ServerState,
    figures: BackupDoc,
    datasets: dict[str, DatasetDoc] | None,
) -> BackupDoc:
    try:
        result = backups.run_tool(argv)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)  # an interrupted backup is no backup
        raise
    figures["duration_s"] = round(result.seconds, 3)
    if result.returncode != 0:
        written = backups.disk_usage(dest) if dest.exists() else 0
        error = result.last_error()
        hint = backups.space_hint(root, error)  # before the partial backup is removed
        shutil.rmtree(dest, ignore_errors=True)
        figures["bytes_written_before_failure"] = written
        raise BackupFailed(f"pg_basebackup failed: {error}{hint}", figures)
    after = server_state(env)
    figures.update(_manifest_figures(dest))
    size = backups.disk_usage(dest)
    figures["backup_bytes"] = size
    figures["backup_wal_bytes"] = backups.disk_usage(dest / "pg_wal")
    figures.update(wal_figures(before, after))
    figures.update(rates(figures))
    backups.record(
        env,
        backups.Backup(
            name=dest.name,
            tool="basebackup",
            kind=kind,
            path=str(dest),
            parent=parent.name if parent else None,
            start_lsn=figures.get("start_lsn"),
            stop_lsn=figures.get("stop_lsn"),
            datasets=datasets,
        ),
    )
    return figures


def rates(figures: BackupDoc) -> BackupDoc:
    """Throughput and ratios of a backup's figures:
    - throughput_bytes_per_s: what the tool copied (uncompressed: `copied_bytes`, else the
      backup's size) per second of the backup;
    - compression_ratio: copied bytes over stored bytes (1.0 for pg_basebackup's plain
      format, which does not compress);
    - size_ratio: the databases' size over the stored bytes without the WAL a backup carries
      (about 1 for a full plain backup; for incremental ones, what skipping unchanged blocks
      saved)."""
    out: BackupDoc = {}
    size, seconds, source = (
        figures.get("backup_bytes"),
        figures.get("duration_s"),
        figures.get("source_bytes"),
    )
    copied = figures.get("copied_bytes") or size
    if copied and seconds:
        out["throughput_bytes_per_s"] = round(copied / seconds)
    if copied and size:
        out["compression_ratio"] = round(copied / size, 3)
    data = (size or 0) - (figures.get("backup_wal_bytes") or 0)  # the WAL copied is extra
    if data > 0 and source:
        out["size_ratio"] = round(source / data, 3)
    return out


def _manifest_figures(dest: Path) -> BackupDoc:
    """Start and stop LSN of the backup (its WAL range) from backup_manifest."""
    try:
        doc = json.loads((dest / "backup_manifest").read_text())
    except (OSError, ValueError):
        return {}
    ranges = doc.get("WAL-Ranges") or []
    if not ranges:
        return {}
    start, stop = ranges[0]["Start-LSN"], ranges[-1]["End-LSN"]
    return {
        "start_lsn": start,
        "stop_lsn": stop,
        "wal_bytes": lsn_bytes(stop) - lsn_bytes(start),
        "files": len(doc.get("Files") or []),
    }
