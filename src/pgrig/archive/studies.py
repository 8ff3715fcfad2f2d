"""The studies table: a study created (or found again to resume), read, listed, given a
status, its extra document merged, and removed while it holds no run. Its runs are read through
archive/runs.py.

A running study names the pgrig process running it in extra["lease"] (archive/lease.py's
Owner): a study killed between two runs (kill -9, the OOM killer) has no running run whose
death tells, so recovery.py ends it "interrupted" by its lease. Other statuses drop the lease.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from pgrig.archive import lease
from pgrig.archive.engine import Database
from pgrig.archive.models import runs as runs_t
from pgrig.archive.models import studies as studies_t
from pgrig.archive.records import StudyRecord
from pgrig.archive.rows import (
    STUDY_LEASE,
    STUDY_STATUSES,
    db_time,
    inserted_id,
    record_time,
    study_from_row,
)
from pgrig.archive.runs import RunTable
from pgrig.errors import NotFound, PgrigError
from pgrig.record.documents import StudyExtra


class StudyTable:
    """The studies of one archive database."""

    def __init__(self, db: Database, runs: RunTable) -> None:
        self._db = db
        self._runs = runs

    def create_study(self, rec: StudyRecord, resume: bool = False) -> StudyRecord:
        """Create a study; its name must be new unless `resume`, which returns the stored one."""
        if not rec.name or not rec.name.strip():
            raise PgrigError("a study needs a name")
        with self._db.write() as conn:
            row = conn.execute(select(studies_t).where(studies_t.c.name == rec.name)).mappings()
            existing = row.first()
            if existing is not None:
                if resume:
                    return study_from_row(existing)
                raise PgrigError(
                    f"study {rec.name!r} already exists in archive {self._db.url}: resume it or "
                    "choose another name"
                )
            created = rec.created_at or datetime.now(UTC)
            extra = dict(rec.extra)
            if rec.status == "running":
                extra[STUDY_LEASE] = lease.Owner.me().as_columns()
            try:
                sid = inserted_id(
                    conn.execute(
                        insert(studies_t).values(
                            name=rec.name,
                            kind=rec.kind,
                            spec=rec.spec,
                            status=rec.status,
                            created_at=db_time(created, self._db.sqlite),
                            extra=json.dumps(extra, default=str) if extra else None,
                        )
                    )
                )
            except IntegrityError:  # created concurrently by another process
                raise PgrigError(
                    f"study {rec.name!r} already exists in archive {self._db.url}"
                ) from None
        return StudyRecord(
            name=rec.name,
            kind=rec.kind,
            spec=rec.spec,
            id=sid,
            created_at=record_time(created),
            status=rec.status,
            extra=rec.extra.copy(),
        )

    def get_study(self, name: str) -> StudyRecord:
        with self._db.read() as conn:
            row = conn.execute(select(studies_t).where(studies_t.c.name == name)).mappings().first()
        if row is None:
            raise NotFound(f"study {name!r} is not in archive {self._db.url}")
        return study_from_row(row)

    def list_studies(self) -> list[StudyRecord]:
        with self._db.read() as conn:
            rows = conn.execute(select(studies_t).order_by(studies_t.c.id)).mappings().all()
        return [study_from_row(r) for r in rows]

    def set_study_status(self, name: str, status: str) -> None:
        if status not in STUDY_STATUSES:
            raise PgrigError(
                f"unknown study status {status!r}: expected one of {', '.join(STUDY_STATUSES)}"
            )
        with self._db.write() as conn:
            row = conn.execute(select(studies_t.c.extra).where(studies_t.c.name == name)).first()
            if row is None:
                raise NotFound(f"study {name!r} is not in archive {self._db.url}")
            extra = json.loads(row[0]) if row[0] else {}
            extra.pop(STUDY_LEASE, None)
            if status == "running":  # this process runs it (a resume: the new one)
                extra[STUDY_LEASE] = lease.Owner.me().as_columns()
            conn.execute(
                update(studies_t)
                .where(studies_t.c.name == name)
                .values(status=status, extra=json.dumps(extra, default=str) if extra else None)
            )

    def delete_empty_study(self, name: str) -> bool:
        """Remove a study that holds no run (one whose first run could not start), so a
        corrected command can create it again; True if it was removed."""
        with self._db.write() as conn:
            sid = self._runs.study_id(conn, name)
            if conn.execute(select(runs_t.c.id).where(runs_t.c.study_id == sid).limit(1)).first():
                return False
            conn.execute(delete(studies_t).where(studies_t.c.id == sid))
            return True

    def update_study_extra(self, name: str, values: StudyExtra) -> None:
        """Merge `values` into a study's extra (a tuning study keeps its trials there)."""
        with self._db.write() as conn:
            row = conn.execute(select(studies_t.c.extra).where(studies_t.c.name == name)).first()
            if row is None:
                raise NotFound(f"study {name!r} is not in archive {self._db.url}")
            extra = {**(json.loads(row[0]) if row[0] else {}), **values}
            conn.execute(
                update(studies_t)
                .where(studies_t.c.name == name)
                .values(extra=json.dumps(extra, default=str))
            )
