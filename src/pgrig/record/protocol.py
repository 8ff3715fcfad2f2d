"""What the rest of pgrig needs of an archive, as Protocols (optuna's BaseStorage is the
model): `RunReader` for the surfaces that only read (reports, the web, comparisons), `RunStore`
for the runners that also write. `archive.store.Archive` is the implementation; a test
double (or another backend) only has to provide these methods, and mypy checks every caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pgrig.record.documents import StudyExtra
from pgrig.record.run import RunFilter, RunRecord, RunSeries, StudyRecord


class RunReader(Protocol):
    """Reading runs and studies."""

    url: str  # safe to show (no password)

    def get_run(self, run_id: int) -> RunRecord: ...

    def run_series(self, run_id: int, kinds: list[str] | None = None) -> RunSeries: ...

    def list_runs(
        self,
        filter: RunFilter | None = None,
        limit: int | None = 50,
        offset: int = 0,
        order: str = "-id",
    ) -> list[RunRecord]: ...

    def count_runs(self, filter: RunFilter | None = None) -> int: ...

    def running_owner(self, run_id: int) -> str | None: ...

    def get_study(self, name: str) -> StudyRecord: ...

    def list_studies(self) -> list[StudyRecord]: ...

    def study_runs(self, name: str) -> list[RunRecord]: ...

    def add_warnings(self, recs: list[RunRecord]) -> list[RunRecord]: ...

    def add_blobs(self, recs: list[RunRecord], kinds: Sequence[str]) -> list[RunRecord]: ...


class RunStore(RunReader, Protocol):
    """Reading and writing: the run's life cycle and studies."""

    def begin_run(self, rec: RunRecord) -> int: ...

    def finish_run(self, rec: RunRecord, *, wait_s: float | None = None) -> None: ...

    def end_run(self, run_id: int, status: str, error: str) -> None: ...

    def mark_run(self, run_id: int, status: str, reason: str) -> None: ...

    def heartbeat(self, run_id: int) -> None: ...

    def delete_run(self, run_id: int) -> None: ...

    def create_study(self, rec: StudyRecord, resume: bool = False) -> StudyRecord: ...

    def set_study_status(self, name: str, status: str) -> None: ...

    def delete_empty_study(self, name: str) -> bool: ...

    def update_study_extra(self, name: str, values: StudyExtra) -> None: ...
