"""What dead runs left, recovered when an archive is opened: records spooled while the archive
was away are imported (archive/spool.py), then running runs whose owner died are marked "lost"
with the partial series they spooled, and their studies "interrupted" (resumable), as is a
running study whose own process died between two runs (its lease: archive/studies.py).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from sqlalchemy import delete, insert, select, update

from pgrig.archive import lease, live_runs
from pgrig.archive.engine import Database
from pgrig.archive.models import runs as runs_t
from pgrig.archive.models import series as series_t
from pgrig.archive.models import studies as studies_t
from pgrig.archive.records import RunRecord
from pgrig.archive.rows import STUDY_LEASE, encode, record_time
from pgrig.archive.runs import RunTable
from pgrig.errors import NotFound, PgrigError


class SpoolImport(NamedTuple):
    """What `runs import PATH` did: `imported_before` when the archive already held the run
    finished (the record was written again; the file given was left in place)."""

    run_id: int
    imported_before: bool


class Recovery:
    """Recovery of one archive; `recovered` says what it did (one line each, for the CLI to
    show) and `lost_runs` which runs it marked lost (their environments: to undo)."""

    def __init__(self, db: Database, runs: RunTable) -> None:
        self._db = db
        self._runs = runs
        self.recovered: list[str] = []
        self.lost_runs: list[int] = []

    def mark_lost_runs(self, wait_s: float = 1.0) -> list[int]:
        """Mark "lost" every running run whose owner is gone, with the partial series it
        spooled (spool.py), and its running study "interrupted" (resumable). Costs one indexed
        SELECT when nothing is running. A run whose row another writer holds for more than
        `wait_s` is left for the next command."""
        from pgrig.archive import spool
        from pgrig.archive.artifacts import run_artifacts_dir

        with self._db.read() as conn:
            running = live_runs.lease_rows(conn, [runs_t.c.status == "running"])
            now = self._db.clock(conn) if running else datetime.now(UTC)
        dead = [r for r in running if live_runs.is_lost(r, now)]
        marked = []
        for row in dead:
            series = spool.read_partial_series(row["id"], archive=self._db.url)
            encoded = [(kind, *encode(cols)) for kind, cols in series.items()]
            try:
                with self._db.try_write(wait_s) as conn:
                    done = conn.execute(
                        update(runs_t)
                        .where(runs_t.c.id == row["id"], runs_t.c.status == "running")
                        .values(
                            status="lost",
                            ended_at=row["heartbeat_at"] or row["started_at"],
                            error=live_runs.lost_reason(row),
                        )
                    )
                    if done.rowcount != 1:
                        continue  # finished or marked meanwhile
                    if row["study_id"] is not None:  # its study died with it: resumable
                        conn.execute(
                            update(studies_t)
                            .where(
                                studies_t.c.id == row["study_id"], studies_t.c.status == "running"
                            )
                            .values(status="interrupted")
                        )
                    if encoded:
                        conn.execute(delete(series_t).where(series_t.c.run_id == row["id"]))
                        conn.execute(
                            insert(series_t),
                            [
                                {"run_id": row["id"], "kind": k, "codec": c, "data": d}
                                for k, c, d in encoded
                            ],
                        )
            except PgrigError:
                continue
            marked.append(row["id"])
            spool.PartialSeries(
                run_artifacts_dir(row["id"], create=False, archive=self._db.url)
            ).remove()
        return marked

    def mark_abandoned_studies(self, wait_s: float = 1.0) -> list[str]:
        """Mark "interrupted" (resumable) every running study whose process is gone and that
        has no running run (a running run's own lease decides for it); their names. One
        SELECT when no study is running; a study begun by an older pgrig has no lease and is
        left as it is."""
        with self._db.read() as conn:
            running = conn.execute(
                select(studies_t.c.id, studies_t.c.name, studies_t.c.extra).where(
                    studies_t.c.status == "running"
                )
            ).all()
            busy = set()
            if running:
                busy = {
                    sid
                    for (sid,) in conn.execute(
                        select(runs_t.c.study_id).where(
                            runs_t.c.status == "running", runs_t.c.study_id.is_not(None)
                        )
                    )
                }
        marked = []
        for sid, name, extra in running:
            if sid in busy or not _owner_gone(extra):
                continue
            try:
                with self._db.try_write(wait_s) as conn:
                    done = conn.execute(
                        update(studies_t)
                        .where(studies_t.c.id == sid, studies_t.c.status == "running")
                        .where(studies_t.c.extra == extra)  # not resumed meanwhile
                        .values(status="interrupted")
                    )
            except PgrigError:
                continue
            if done.rowcount == 1:
                marked.append(name)
        return marked

    def import_spooled(self, path: Path) -> SpoolImport:
        """Import one spooled record (spool.py) in one transaction and remove the file.

        Refuses a spool of another archive, or one whose run id holds another run here."""
        from pgrig.archive import spool

        owner_url, rec = spool.read_spool(path)
        if owner_url != self._db.url:
            raise PgrigError(
                f"{path} belongs to archive {owner_url}, not {self._db.url}: open that archive "
                "(--archive or PGRIG_ARCHIVE) to import it"
            )
        return self._import_record(rec, path, given=True)

    def _import_record(
        self, rec: RunRecord, path: Path, wait_s: float | None = None, given: bool = False
    ) -> SpoolImport:
        """`given`: a file the user named (`runs import PATH`): when the archive already holds
        the run finished (imported before), the same record is written again and the file,
        and the partial series beside it, are left as they are (they may be the user's copy)."""
        from pgrig.archive import spool

        assert rec.id is not None  # write_spool refuses records without one
        with self._db.read() as conn:
            found = self._runs.select(conn, [runs_t.c.id == rec.id])
        if not found:
            raise NotFound(f"run {rec.id} of {path} is not in archive {self._db.url} (deleted?)")
        here = found[0]
        if here.env_name != rec.env_name or here.started_at != record_time(rec.started_at):
            raise PgrigError(
                f"run {rec.id} in archive {self._db.url} is not the run spooled in {path}"
            )
        self._runs.finish_run(rec, wait_s=wait_s)
        if given and here.status not in ("running", "lost"):
            return SpoolImport(rec.id, True)  # the files given are not ours to remove
        path.unlink(missing_ok=True)  # the file imported (it may have been given by path)
        spool.forget(rec.id, archive=self._db.url)
        (path.parent / spool.PARTIAL_SERIES).unlink(missing_ok=True)
        return SpoolImport(rec.id, False)

    def recover(self) -> None:
        """Import this archive's spooled records, then mark dead runs lost. Each step is
        skipped when the archive is busy (said in `recovered`): the next command tries again."""
        from pgrig.archive import spool

        for path in spool.pending_spools(self._db.url):
            try:
                owner_url, rec = spool.read_spool(path)
                if owner_url != self._db.url:
                    continue  # another archive's: imported when that one is opened
                run_id = self._import_record(rec, path, wait_s=1.0).run_id
            except spool.SpoolUnreadable as e:  # tried by every command: set aside once
                try:
                    aside = spool.quarantine(path)
                except OSError as moved:
                    self.recovered.append(f"{e}; it could not be set aside: {moved}")
                    continue
                self.recovered.append(
                    f"warning: {e}: set aside as {aside} (nothing imported from it)"
                )
                continue
            except PgrigError as e:
                self.recovered.append(f"spooled run not imported: {e}")
                continue
            # tried by every command: an unforeseen failure never breaks them
            except Exception as e:
                self.recovered.append(
                    f"warning: spooled run {path} not imported: {type(e).__name__}: {e}"
                )
                continue
            self.recovered.append(f"run {run_id} imported from {path}")
        for run_id in self.mark_lost_runs():
            self.lost_runs.append(run_id)
            self.recovered.append(f"run {run_id} marked lost: its pgrig process is gone")
        for name in self.mark_abandoned_studies():
            self.recovered.append(
                f"study {name} marked interrupted: its pgrig process is gone (resumable)"
            )


def _owner_gone(extra: str | None) -> bool:
    """Whether a study's extra names a lease whose process is gone on this host."""
    try:
        owner = lease.Owner.from_columns(json.loads(extra or "{}")[STUDY_LEASE])
    except (ValueError, KeyError, TypeError):
        return False  # no lease (an older pgrig's study) or not readable: not ours to judge
    return lease.is_gone(owner) is True
