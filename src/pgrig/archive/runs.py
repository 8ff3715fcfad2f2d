"""The runs table and its children (tags, scripts, blobs, series): a run begun, finished in one
transaction, read back whole or light, listed, counted, ended, marked, deleted and stamped alive.
Rows are made and read by archive/rows.py; transactions are archive/engine.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Connection, delete, func, insert, select, update

from pgrig.archive import lease, live_runs
from pgrig.archive.engine import Database
from pgrig.archive.models import BLOB_KINDS
from pgrig.archive.models import blobs as blobs_t
from pgrig.archive.models import runs as runs_t
from pgrig.archive.models import scripts as scripts_t
from pgrig.archive.models import series as series_t
from pgrig.archive.models import studies as studies_t
from pgrig.archive.models import tags as tags_t
from pgrig.archive.records import RunFilter, RunRecord
from pgrig.archive.rows import (
    LIGHT_COLUMNS,
    LIGHT_EXTRA_KEYS,
    MARKABLE_STATUSES,
    artifact_map,
    check_status,
    decode,
    encode,
    filter_clauses,
    inserted_id,
    order_clause,
    record_from_row,
    run_row,
    script_from_row,
    script_row,
    series_columns,
    set_blob,
    tag_rows,
)
from pgrig.errors import NotFound, PgrigError
from pgrig.record.doc_read import read_document
from pgrig.record.documents import RunExtra
from pgrig.record.run import RunSeries


class RunTable:
    """The runs of one archive database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def study_id(self, conn: Connection, name: str | None) -> int | None:
        if name is None:
            return None
        sid = conn.execute(select(studies_t.c.id).where(studies_t.c.name == name)).scalar()
        if sid is None:
            raise NotFound(f"study {name!r} is not in archive {self._db.url}")
        return cast(int | None, sid)

    def begin_run(self, rec: RunRecord) -> int:
        """Insert the run with status "running" and commit, so other processes see it at once.

        Sets rec.id, rec.status and rec.started_at (now, if unset); stores the tags too, so a
        running run can be found by tag.
        """
        if rec.id is not None:
            raise ValueError(f"run {rec.id} was already begun")
        rec.status = "running"
        rec.started_at = rec.started_at or datetime.now(UTC)
        with self._db.write() as conn:
            row = run_row(rec, self.study_id(conn, rec.study), self._db.sqlite)
            row.update(lease.Owner.me().as_columns(), heartbeat_at=self._db.now())
            run_id = inserted_id(conn.execute(insert(runs_t).values(row)))
            if rec.tags:
                conn.execute(insert(tags_t), tag_rows(run_id, rec.tags))
        rec.id = run_id
        return run_id

    def finish_run(self, rec: RunRecord, *, wait_s: float | None = None) -> None:
        """Store everything about a run in ONE transaction: the row, scripts, tags, blobs, series.

        On any error nothing of it is written (a begun run stays as it was). A record that was
        never begun (rec.id is None, e.g. an import) is inserted whole and gets its id.
        Sets rec.ended_at (now, if unset and the run is no longer running). `wait_s`: wait at
        most this long for another writer's lock (default: the archive's usual timeout).
        """
        check_status(rec.status)
        if rec.status != "running" and rec.ended_at is None:
            rec.ended_at = datetime.now(UTC)
        rec.started_at = rec.started_at or rec.ended_at or datetime.now(UTC)
        # Encode before the transaction: the write lock is held as briefly as possible.
        blobs = [(kind, *encode(getattr(rec, kind))) for kind in BLOB_KINDS if getattr(rec, kind)]
        series = [(kind, *encode(cols)) for kind, cols in rec.series.items()]
        with self._db.write() if wait_s is None else self._db.try_write(wait_s) as conn:
            row = run_row(rec, self.study_id(conn, rec.study), self._db.sqlite)
            if rec.id is None:
                run_id = inserted_id(conn.execute(insert(runs_t), row))
            else:
                run_id = rec.id
                done = conn.execute(update(runs_t).where(runs_t.c.id == run_id), row)
                if done.rowcount != 1:
                    raise NotFound(f"run {run_id} is not in archive {self._db.url}")
                for table in (tags_t, blobs_t, series_t, scripts_t):
                    conn.execute(delete(table).where(table.c.run_id == run_id))
            if rec.tags:
                conn.execute(insert(tags_t), tag_rows(run_id, rec.tags))
            if blobs:
                conn.execute(
                    insert(blobs_t),
                    [{"run_id": run_id, "kind": k, "codec": c, "data": d} for k, c, d in blobs],
                )
            if series:
                conn.execute(
                    insert(series_t),
                    [{"run_id": run_id, "kind": k, "codec": c, "data": d} for k, c, d in series],
                )
            if rec.scripts:
                conn.execute(insert(scripts_t), [script_row(run_id, s) for s in rec.scripts])
        rec.id = run_id

    def get_run(self, run_id: int) -> RunRecord:
        """The whole run: scalars, tags, scripts, settings, host, artifacts, extra and series."""
        with self._db.read() as conn:
            recs = self.select(conn, [runs_t.c.id == run_id])
            if not recs:
                raise NotFound(f"run {run_id} is not in archive {self._db.url}")
            rec = recs[0]
            rec.scripts = [
                script_from_row(r)
                for r in conn.execute(
                    select(scripts_t)
                    .where(scripts_t.c.run_id == run_id)
                    .order_by(scripts_t.c.script_no)
                ).mappings()
            ]
            for kind, codec, data in conn.execute(
                select(blobs_t.c.kind, blobs_t.c.codec, blobs_t.c.data).where(
                    blobs_t.c.run_id == run_id
                )
            ):
                if kind in BLOB_KINDS:
                    set_blob(rec, kind, decode(codec, data))
            rec.series = self._series(conn, run_id)
        return rec

    def run_series(self, run_id: int, kinds: list[str] | None = None) -> RunSeries:
        """Series of one run, {kind: {column: [values]}}; only `kinds` if given."""
        with self._db.read() as conn:
            if conn.execute(select(runs_t.c.id).where(runs_t.c.id == run_id)).scalar() is None:
                raise NotFound(f"run {run_id} is not in archive {self._db.url}")
            return self._series(conn, run_id, kinds)

    def _series(self, conn: Connection, run_id: int, kinds: list[str] | None = None) -> RunSeries:
        q = select(series_t.c.kind, series_t.c.codec, series_t.c.data).where(
            series_t.c.run_id == run_id
        )
        if kinds is not None:
            q = q.where(series_t.c.kind.in_(kinds))
        return {kind: series_columns(decode(codec, data)) for kind, codec, data in conn.execute(q)}

    def select(
        self,
        conn: Connection,
        where: list[ColumnElement[bool]],
        order: str = "-id",
        limit: int | None = None,
        offset: int = 0,
    ) -> list[RunRecord]:
        q = (
            select(*LIGHT_COLUMNS)
            .select_from(runs_t.outerjoin(studies_t, runs_t.c.study_id == studies_t.c.id))
            .where(*where)
            .order_by(*order_clause(order))
        )
        if limit:
            q = q.limit(limit)
        if offset:
            q = q.offset(offset)
        recs = [record_from_row(r) for r in conn.execute(q).mappings()]
        if recs:
            by_id = {r.id: r for r in recs}
            for run_id, key, value in conn.execute(
                select(tags_t.c.run_id, tags_t.c.key, tags_t.c.value)
                .where(tags_t.c.run_id.in_(list(by_id)))
                .order_by(tags_t.c.run_id, tags_t.c.key)
            ):
                by_id[run_id].tags[key] = value
        return recs

    def list_runs(
        self,
        filter: RunFilter | None = None,
        limit: int | None = 50,
        offset: int = 0,
        order: str = "-id",
    ) -> list[RunRecord]:
        """Light records (scalars and tags; no scripts, blobs or series), newest first by
        default. `order` is a runs column, "-" prefixed for descending; limit None: all."""
        if (limit is not None and limit < 0) or offset < 0:
            raise PgrigError("limit and offset must not be negative")
        with self._db.read() as conn:
            return self.select(conn, filter_clauses(filter), order, limit, offset)

    def count_runs(self, filter: RunFilter | None = None) -> int:
        q = (
            select(func.count())
            .select_from(runs_t.outerjoin(studies_t, runs_t.c.study_id == studies_t.c.id))
            .where(*filter_clauses(filter))
        )
        with self._db.read() as conn:
            return conn.execute(q).scalar_one()

    def delete_run(self, run_id: int) -> None:
        """Remove a run and everything stored with it in one transaction, then its artifact
        files in this home. A live run (its owner still runs it) is refused."""
        from pgrig.archive.artifacts import remove_run_artifacts

        with self._db.write() as conn:
            live_runs.refuse_live(self._db, conn, run_id, "delete")
            stored = conn.execute(
                select(blobs_t.c.codec, blobs_t.c.data).where(
                    blobs_t.c.run_id == run_id, blobs_t.c.kind == "artifacts"
                )
            ).first()
            for table in (tags_t, blobs_t, series_t, scripts_t):
                conn.execute(delete(table).where(table.c.run_id == run_id))
            if conn.execute(delete(runs_t).where(runs_t.c.id == run_id)).rowcount != 1:
                raise NotFound(f"run {run_id} is not in archive {self._db.url}")
        recorded = artifact_map(decode(*stored) if stored is not None else None)
        remove_run_artifacts(run_id, archive=self._db.url, recorded=recorded)

    def end_run(self, run_id: int, status: str, error: str) -> None:
        """The smallest write that ends a running run (status, error, end time), for when its
        whole record could neither be stored nor spooled (e.g. a full disk): the run is then
        never left "running" to be called lost later for a reason that is not the real one."""
        check_status(status)
        with self._db.write() as conn:
            conn.execute(
                update(runs_t)
                .where(runs_t.c.id == run_id, runs_t.c.status == "running")
                .values(status=status, error=error[:2000], ended_at=self._db.now())
            )

    def mark_run(self, run_id: int, status: str, reason: str) -> None:
        """Set the status of a run pgrig could not finish (`pgrig runs mark`); a live run is
        refused. `reason` becomes its error unless it has one."""
        if status not in MARKABLE_STATUSES:
            raise PgrigError(
                f"--status {status!r}: a run can be marked {', '.join(MARKABLE_STATUSES)}"
            )
        with self._db.write() as conn:
            row = live_runs.refuse_live(self._db, conn, run_id, "mark")
            if status == "lost" and row["status"] in ("ok", "failed", "aborted"):
                raise PgrigError(
                    f'cannot mark run {run_id} lost: it finished ({row["status"]}); "lost" is '
                    "for a run whose pgrig died before it ended"
                )
            values: dict[str, Any] = {"status": status, "error": row["error"] or reason}
            if row["ended_at"] is None:
                values["ended_at"] = row["heartbeat_at"] or row["started_at"]
            conn.execute(update(runs_t).where(runs_t.c.id == run_id).values(**values))

    def heartbeat(self, run_id: int) -> None:
        """Stamp a running run as alive (its heartbeat thread calls this every few seconds)."""
        with self._db.write() as conn:
            conn.execute(
                update(runs_t)
                .where(runs_t.c.id == run_id, runs_t.c.status == "running")
                .values(heartbeat_at=self._db.now())
            )

    def study_runs(self, name: str) -> list[RunRecord]:
        """Light records of a study's runs in the order they were made (study_point, repeat
        are set on each), with their warnings (a report names the runs of a busy host)."""
        with self._db.read() as conn:
            self.study_id(conn, name)
            recs = self.select(conn, [studies_t.c.name == name], order="id")
            self._add_warnings(conn, recs)
            return recs

    def add_warnings(self, recs: list[RunRecord]) -> list[RunRecord]:
        """Light records (list_runs) given their extra["warnings"] (and the other
        LIGHT_EXTRA_KEYS: a backup run's figures), in one query."""
        with self._db.read() as conn:
            self._add_warnings(conn, recs)
        return recs

    def add_blobs(self, recs: list[RunRecord], kinds: Sequence[str]) -> list[RunRecord]:
        """Light records given their blobs of these kinds (e.g. host, insights), in one query."""
        unknown = set(kinds) - set(BLOB_KINDS)
        if unknown:
            raise ValueError(f"unknown blob kinds {sorted(unknown)}")
        by_id = {r.id: r for r in recs if r.id is not None}
        if not by_id or not kinds:
            return recs
        q = select(blobs_t.c.run_id, blobs_t.c.kind, blobs_t.c.codec, blobs_t.c.data).where(
            blobs_t.c.kind.in_(list(kinds)), blobs_t.c.run_id.in_(list(by_id))
        )
        with self._db.read() as conn:
            for run_id, kind, codec, data in conn.execute(q):
                set_blob(by_id[run_id], kind, decode(codec, data))
        return recs

    def _add_warnings(self, conn: Connection, recs: list[RunRecord]) -> None:
        by_id = {r.id: r for r in recs if r.id is not None}
        if not by_id:
            return
        q = select(blobs_t.c.run_id, blobs_t.c.codec, blobs_t.c.data).where(
            blobs_t.c.kind == "extra", blobs_t.c.run_id.in_(list(by_id))
        )
        for run_id, codec, data in conn.execute(q):
            extra = read_document(RunExtra, decode(codec, data))
            light = by_id[run_id].extra
            for key in LIGHT_EXTRA_KEYS:
                if extra.get(key):
                    light[key] = extra[key]  # type: ignore[literal-required]
