"""What keeps a run recoverable if pgrig dies: its lease, its partial series, its work dir.

- `work_dir()`: the run's scratch directory (pgbench's per-transaction logs), in memory when
  possible, with an OWNER file naming the process (archive/lease.py's Owner). Any later
  pgrig command removes the work directories whose owner is gone (`remove_orphan_work_dirs`).
- `RunLease`: while pgbench runs, one daemon thread stamps the run's heartbeat in the archive
  every few seconds and appends the per-second rows gathered since its last beat to the run's
  partial series file (archive/spool.py). Nothing of it runs on pgbench's hot path.
- `finish_or_spool`: the run's last write; when the archive is unavailable (SQLite locked,
  PostgreSQL down) the complete record is spooled to the run's directory instead, for the
  next command to import.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from pgrig import interrupts
from pgrig.archive import lease, spool
from pgrig.archive.artifacts import run_artifacts_dir
from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.record.protocol import RunStore
from pgrig.record.run import RunSeries

__all__ = [
    "RunLease",
    "RunNotStored",
    "begin",
    "finish_or_spool",
    "remove_orphan_work_dirs",
    "work_dir",
]

WORK_PREFIX = "pgrig-run-"
OWNER_FILE = "OWNER"
SPOOL_EVERY_BEATS = 2  # partial series every other heartbeat: ~10 s of data at most is lost


def _work_bases() -> list[str]:
    """Where work directories may be: PGRIG_WORK_DIR, else /dev/shm or the temp dir."""
    base = os.environ.get("PGRIG_WORK_DIR")
    return [base] if base else ["/dev/shm", tempfile.gettempdir()]


def work_dir() -> Path:
    """Scratch space for pgbench's per-transaction logs, in memory (tmpfs) when possible.

    Measured here: pgbench -S at ~21k tps lost 7-13% of its throughput writing its log to an
    ext4 disk, and nothing measurable writing it to tmpfs. The log reader frees what it has read
    (load/engines/txlog_follower.py), so the space used stays small whatever the duration.
    PGRIG_WORK_DIR overrides the place.
    """
    from pgrig.machine.checks import MIN_TMPFS

    base = os.environ.get("PGRIG_WORK_DIR")
    if base is None and _tmpfs_ok("/dev/shm", MIN_TMPFS):
        base = "/dev/shm"
    try:
        path = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=base))
    except OSError as e:
        raise PgrigError(f"cannot create a work directory in {base or '/tmp'}: {e}") from e
    try:  # the OWNER file lets a later command clean up after a kill -9
        (path / OWNER_FILE).write_text(json.dumps(lease.Owner.me().as_columns()))
    except OSError as e:
        shutil.rmtree(path, ignore_errors=True)
        raise PgrigError(f"cannot write to the work directory {path}: {e}") from e
    return path


def _tmpfs_ok(path: str, min_free: int) -> bool:
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return os.access(path, os.W_OK) and st.f_bavail * st.f_frsize >= min_free


def _owner_of(path: Path) -> lease.Owner | None:
    try:
        return lease.Owner.from_columns(json.loads((path / OWNER_FILE).read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_orphan_work_dirs() -> list[Path]:
    """Remove the work directories of dead pgrig processes on this host; returns them.

    A directory without a readable OWNER file is left alone (another pgrig version's, or one
    being created this instant)."""
    removed = []
    for base in dict.fromkeys(_work_bases()):
        with contextlib.suppress(OSError):
            for path in Path(base).glob(f"{WORK_PREFIX}*"):
                owner = _owner_of(path)
                if owner is not None and lease.is_gone(owner):
                    shutil.rmtree(path, ignore_errors=True)
                    removed.append(path)
    return removed


SeriesSource = Callable[[], RunSeries]


class RunLease:
    """The heartbeat of one running run, and the writer of its partial series.

    `series`: returns the per-second series gathered so far (columnar, t relative to the
    window's planned start), called from the heartbeat thread.
    """

    def __init__(
        self, archive: RunStore, rec: RunRecord, run_dir: Path, series: SeriesSource
    ) -> None:
        assert rec.id is not None
        self._archive = archive
        self._run_id = rec.id
        self._series = series
        self.partial = spool.PartialSeries(run_dir)
        self._beats = 0
        self._heartbeat = lease.Heartbeat(self._beat)

    def start(self) -> None:
        self._heartbeat.start()

    def stop(self) -> None:
        self._heartbeat.stop()

    def _beat(self) -> None:
        self._beats += 1
        if self._beats % SPOOL_EVERY_BEATS == 0:
            with contextlib.suppress(Exception):  # a full disk must not stop the heartbeat
                self.partial.append(self._series())
        self._archive.heartbeat(self._run_id)


def begin(archive: RunStore, rec: RunRecord) -> int:
    """The run's row, "running", and its id in `rec`, as one step a signal does not cut: a
    SIGTERM or Ctrl-C that comes meanwhile is raised once the id is known, so the caller can
    end the run "aborted" instead of leaving it "running" with nobody to end it."""
    with interrupts.deferred():
        rec.id = archive.begin_run(rec)
    return rec.id


class RunNotStored(PgrigError):
    """A run's record could neither be archived nor spooled: `record` holds what it measured,
    for the caller to print (nothing else keeps it)."""

    def __init__(self, message: str, record: RunRecord) -> None:
        super().__init__(message)
        self.record = record


def end_without_record(archive: RunStore, rec: RunRecord, message: str) -> str:
    """Try the smallest write that ends the run in the archive (a finished run's own status,
    "failed" for one still "ok" or "running"); says what became of it."""
    if rec.id is None:
        return ""
    status = "failed" if rec.status in ("ok", "running") else rec.status
    try:
        archive.end_run(rec.id, status, f"{rec.error + '; ' if rec.error else ''}{message}")
    except Exception:
        return f"; run {rec.id} stays 'running' in the archive until a later command marks it lost"
    return f"; run {rec.id} is marked {status} in the archive, without its figures"


def finish_or_spool(archive: RunStore, rec: RunRecord) -> Path | None:
    """archive.finish_run(rec), or, when the archive cannot take it, the complete record
    written to the run's directory (returned) for the next pgrig command to import."""
    try:
        archive.finish_run(rec)
    except Exception as e:
        reason = f"{type(e).__name__}: {e}"
        try:
            return spool.write_spool(rec, archive.url, reason)
        except Exception as disk:  # a full disk, or a record that cannot be encoded at all
            detail = str(disk) if isinstance(disk, OSError) else f"{type(disk).__name__}: {disk}"
            message = (
                f"run {rec.id} could not be recorded: archive {archive.url} could not store it "
                f"({reason}) and its record could not be written to disk ({detail})"
            )
            ended = end_without_record(archive, rec, message)
            raise RunNotStored(message + ended, rec) from e
    if rec.id is not None:  # the archive holds the whole series now
        spool.PartialSeries(run_artifacts_dir(rec.id, create=False, archive=archive.url)).remove()
    return None
