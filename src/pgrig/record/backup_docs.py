"""A backup's or a restore's figures, and the load measured beside a backup (load/backup/)."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

__all__ = [
    "BackupDoc",
    "DuringDoc",
    "DuringLoad",
    "RowCount",
    "VerifyDoc",
]


class DuringLoad(TypedDict, total=False):
    """The load run measured during a backup."""

    id: int | None
    status: str
    workload: str
    clients: int
    threads: int
    duration_s: float | None
    tps: float | None
    avg_ms: float | None
    p95_ms: float | None
    p99_ms: float | None


class DuringDoc(TypedDict, total=False):
    """extra["during"] of a backup run with `--during`: the load beside it and the verdict
    against the same load without a backup."""

    load: DuringLoad
    baseline_runs: list[int | None]
    load_runs: list[int | None]
    backup_started_s: float | None  # from the start of the load's window
    overlap_s: float | None
    covered_fraction: float | None
    comparison: dict[str, dict[str, Any]]  # metric -> analysis.compare's Comparison.as_dict()


class RowCount(TypedDict, total=False):
    expected: int
    found: int


class VerifyDoc(TypedDict, total=False):
    """What the restored server showed (load/backup/backup_verify.py): row counts and pg_amcheck."""

    ok: bool
    problem: str | None
    counts: dict[str, RowCount]  # "<database>.<table>" -> expected and found rows
    counts_note: str  # why no row counts were checked (a backup that recorded no data)
    counts_s: float
    amcheck: str  # ok | failed | not available
    amcheck_s: float
    amcheck_error: str | None


class BackupDoc(TypedDict, total=False):
    """extra["backup"]: a backup's or a restore's figures, assembled by the backup tools'
    modules (provision/server/basebackup.py, pgbackrest.py, restore.py) and
    load/backup/backup_run.py. Sizes in bytes, durations in seconds."""

    tool: str  # pg_basebackup | pgbackrest | "restore (<tool>)"
    type: str  # full | incremental | diff | incr | restore
    name: str | None
    path: str
    parent: str | None  # the backup an incremental one builds on
    source_bytes: int  # the databases' size when the backup started
    wal_lsn_before: str
    wal_lsn_after: str
    wal_generated_bytes: int  # pg_stat_wal's wal_bytes grown (14+), else the LSN advance
    wal_generated_what: str  # which of the two, in words
    wal_lsn_advance_bytes: int  # with the padding of the segment switch the backup forces
    duration_s: float | None
    bytes_written_before_failure: int
    start_lsn: str | None  # the backup's WAL range (backup_manifest, pgbackrest info)
    stop_lsn: str | None
    wal_bytes: int
    files: int  # files in the backup (backup_manifest)
    backup_bytes: int | None  # what the backup stores
    backup_wal_bytes: int
    copied_bytes: int | None  # what the tool read (pgBackRest's delta), uncompressed
    throughput_bytes_per_s: int
    compression_ratio: float
    size_ratio: float
    # pgBackRest's own (pgbackrest info)
    label: str | None
    pgbackrest_type: str | None
    database_bytes: int | None
    delta_bytes: int | None
    repository_bytes: int | None
    wal_start: str | None
    wal_stop: str | None
    tool_seconds: float | None
    # a restore (provision/server/restore.py): the backup restored and its chain
    backup: str
    chain: list[str]
    restore_method: str  # pg_combinebackup, or cp -a (a lone full backup before PostgreSQL 17)
    scratch: str  # the scratch server's data directory
    port: int | None  # the scratch server's
    restore_s: float  # the files
    start_s: float  # start and recovery until ready
    restore_total_s: float
    verify: VerifyDoc
    # load/backup/backup_run.py: the wall clock (ISO 8601, UTC)
    started_at: str
    ended_at: str
