"""The archive: every run, whatever its outcome, in SQLite (local) or PostgreSQL (teams).

Modelled on optuna's RDB storage: SQLAlchemy 2 over the tables in models.py, Alembic
migrations shipped inside the package and applied automatically when an archive is opened.
Opening an archive that is already at the head revision costs one query and imports neither
Alembic nor the ORM (the store works on the Core tables), so `pgrig runs list` stays fast.

Concurrency: a run inserts its row at once (`begin_run` commits) so other processes see it, and
writes its results in one transaction (`finish_run`). On SQLite the journal is WAL with a busy
timeout, so listing works while a run is writing; write transactions take the lock up front
(BEGIN IMMEDIATE) instead of failing half-way when another writer got there first.

`Archive` is a thin facade (patroni/postgresql's layout): each concern is a collaborator of
its own, one per module. The database and its transactions: engine.py; the schema and its
migrations: schema.py; records <-> rows: rows.py; the runs table: runs.py; the studies table:
studies.py; which running runs are alive: live_runs.py; what dead runs left: recovery.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pgrig.archive import live_runs, schema
from pgrig.archive.engine import ArchiveDamaged, Database, mask_url, normalize_url
from pgrig.archive.records import RunFilter, RunRecord, StudyRecord
from pgrig.archive.recovery import Recovery, SpoolImport
from pgrig.archive.rows import LIGHT_EXTRA_KEYS, MARKABLE_STATUSES, RUN_STATUSES, STUDY_STATUSES
from pgrig.archive.runs import RunTable
from pgrig.archive.schema import (
    MIGRATIONS_DIR,
    SCHEMA_HEAD,
    VERSION_TABLE,
    alembic_config,
    alembic_main,
)
from pgrig.archive.studies import StudyTable
from pgrig.record.documents import StudyExtra
from pgrig.record.run import RunSeries

__all__ = [
    "LIGHT_EXTRA_KEYS",
    "MARKABLE_STATUSES",
    "MIGRATIONS_DIR",
    "RUN_STATUSES",
    "SCHEMA_HEAD",
    "STUDY_STATUSES",
    "VERSION_TABLE",
    "Archive",
    "ArchiveDamaged",
    "alembic_config",
    "alembic_main",
    "mask_url",
    "normalize_url",
]


class Archive:
    """All runs and studies. `Archive()` opens the default archive (PGRIG_ARCHIVE or SQLite in
    the pgrig home).

    Schema: a new (empty) archive is created at this code's revision. An SQLite archive (one
    user's file) is upgraded automatically; a PostgreSQL archive is shared, so an older schema
    is upgraded only when asked (`upgrade=True`: `pgrig archive upgrade`), never behind the
    back of the team's other, older clients. A schema newer than this code is refused.

    Opening also recovers what dead runs left (`recover`): spooled records of this archive are
    imported, then runs whose owner died are marked "lost" (archive/lease.py, spool.py).
    """

    def __init__(
        self, url: str | None = None, *, upgrade: bool | None = None, recover: bool = True
    ) -> None:
        self._db = Database(url)
        self._url = self._db.raw_url
        self.url = self._db.url  # safe to show
        self._runs = RunTable(self._db)
        self._studies = StudyTable(self._db, self._runs)
        self._recovery = Recovery(self._db, self._runs)
        self.recovered = self._recovery.recovered  # what recover() did, one line each
        self.lost_runs = self._recovery.lost_runs  # the runs it marked lost (envs: to undo)
        self.schema_before: str | None = None  # the revision opening found
        try:
            self.schema_before = schema.ensure(
                self._db, self._db.sqlite if upgrade is None else upgrade
            )
            schema.probe(self._db)
            if recover:
                self.recover()
        except BaseException:
            self._db.close()
            raise

    def __repr__(self) -> str:
        return f"Archive({self.url!r})"

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def schema_revision(self) -> str | None:
        return schema.revision(self._db)

    # --- runs (runs.py) ------------------------------------------------------------------------

    def begin_run(self, rec: RunRecord) -> int:
        return self._runs.begin_run(rec)

    def finish_run(self, rec: RunRecord, *, wait_s: float | None = None) -> None:
        self._runs.finish_run(rec, wait_s=wait_s)

    def get_run(self, run_id: int) -> RunRecord:
        return self._runs.get_run(run_id)

    def run_series(self, run_id: int, kinds: list[str] | None = None) -> RunSeries:
        return self._runs.run_series(run_id, kinds)

    def list_runs(
        self,
        filter: RunFilter | None = None,
        limit: int | None = 50,
        offset: int = 0,
        order: str = "-id",
    ) -> list[RunRecord]:
        return self._runs.list_runs(filter, limit, offset, order)

    def count_runs(self, filter: RunFilter | None = None) -> int:
        return self._runs.count_runs(filter)

    def delete_run(self, run_id: int) -> None:
        self._runs.delete_run(run_id)

    def end_run(self, run_id: int, status: str, error: str) -> None:
        self._runs.end_run(run_id, status, error)

    def mark_run(self, run_id: int, status: str, reason: str) -> None:
        self._runs.mark_run(run_id, status, reason)

    def heartbeat(self, run_id: int) -> None:
        self._runs.heartbeat(run_id)

    def study_runs(self, name: str) -> list[RunRecord]:
        return self._runs.study_runs(name)

    def add_warnings(self, recs: list[RunRecord]) -> list[RunRecord]:
        return self._runs.add_warnings(recs)

    def add_blobs(self, recs: list[RunRecord], kinds: Sequence[str]) -> list[RunRecord]:
        return self._runs.add_blobs(recs, kinds)

    def running_owner(self, run_id: int) -> str | None:
        return live_runs.running_owner(self._db, run_id)

    # --- what dead runs left (recovery.py) -----------------------------------------------------

    def recover(self) -> None:
        self._recovery.recover()

    def mark_lost_runs(self, wait_s: float = 1.0) -> list[int]:
        return self._recovery.mark_lost_runs(wait_s)

    def mark_abandoned_studies(self, wait_s: float = 1.0) -> list[str]:
        return self._recovery.mark_abandoned_studies(wait_s)

    def import_spooled(self, path: Path) -> SpoolImport:
        return self._recovery.import_spooled(path)

    # --- studies (studies.py) ------------------------------------------------------------------

    def create_study(self, rec: StudyRecord, resume: bool = False) -> StudyRecord:
        return self._studies.create_study(rec, resume)

    def get_study(self, name: str) -> StudyRecord:
        return self._studies.get_study(name)

    def list_studies(self) -> list[StudyRecord]:
        return self._studies.list_studies()

    def set_study_status(self, name: str, status: str) -> None:
        self._studies.set_study_status(name, status)

    def delete_empty_study(self, name: str) -> bool:
        return self._studies.delete_empty_study(name)

    def update_study_extra(self, name: str, values: StudyExtra) -> None:
        self._studies.update_study_extra(name, values)
