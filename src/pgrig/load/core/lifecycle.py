"""What keeps a run recoverable if pgrig dies: its lease and its partial series (its work
directory: load/engines/work_dirs.py).

- `RunLease`: while pgbench runs, one daemon thread stamps the run's heartbeat in the archive
  every few seconds and appends the per-second rows gathered since its last beat to the run's
  partial series file (archive/spool.py). Nothing of it runs on pgbench's hot path.
- `finish_or_spool`: the run's last write; when the archive is unavailable (SQLite locked,
  PostgreSQL down) the complete record is spooled to the run's directory instead, for the
  next command to import.
"""

from __future__ import annotations

import contextlib
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
]

SPOOL_EVERY_BEATS = 2  # partial series every other heartbeat: ~10 s of data at most is lost


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
