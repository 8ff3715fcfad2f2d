"""One run as the runner passes it on, whole: prepared (PreparedRun: checked, its settings
applied, before its record) and begun (RunContext: the same with its record, whose row is open).
The runners (measure_here.py with pgbench here, multi_runner.py with load hosts) and the run's
scaffold (run_scaffold.py) read it; none takes the parts as a long parameter list."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from pgrig.archive.records import RunRecord
from pgrig.load.core.run_steps import StopIf
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import DatasetDoc
from pgrig.record.protocol import RunStore
from pgrig.request import RunRequest

if TYPE_CHECKING:
    from pgrig.provision.state.env_lock import EnvLock


@dataclass(frozen=True)
class ServerFacts:
    """The server as the run found it before its record: its version, and the CPU times when
    the run's preparation began (the host checks measure steal and busy share over it)."""

    version: str
    major: int
    cpu_mark: tuple[list[int], float] | None = None


@dataclass(frozen=True, kw_only=True)
class PreparedRun:
    """One run once checked and set up: the request (its scripts resolved), the environment
    and database it measures, the server's facts and the dataset the database holds, where it
    works and stores, how it is shown, what may end it early, and the environment's lock."""

    spec: RunRequest
    env: Environment
    dbname: str
    conninfo: str
    work: Path  # the run's scratch directory
    archive: RunStore
    console: Console
    live: bool  # the live figures on a terminal
    stop_if: StopIf | None = None  # a reason to stop early (a study's guardrail), or None
    server: ServerFacts | None = None
    dataset: DatasetDoc = field(default_factory=DatasetDoc)  # workloads/datasets.usable
    lock: EnvLock | None = None  # held by the caller: the run's id is written to it

    def begun(self, rec: RunRecord) -> RunContext:
        """The run with its record, whose row is open (begin_run gave it its id)."""
        return RunContext(rec=rec, **{f.name: getattr(self, f.name) for f in fields(PreparedRun)})


@dataclass(frozen=True, kw_only=True)
class RunContext(PreparedRun):
    """One run once its row is open: the prepared run and its record (filled as it goes)."""

    rec: RunRecord  # begun: has its id
