"""What the two measuring runners share about one run (measure_here.py with pgbench here,
multi_runner.py `measure` with load hosts): one object instead of a long parameter list."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from pgrig.archive.records import RunRecord
from pgrig.load.core.run_steps import StopIf
from pgrig.provision.state.environment import Environment
from pgrig.record.protocol import RunStore
from pgrig.request import RunRequest


@dataclass(frozen=True)
class RunContext:
    """One run once its row is open: its record (filled as it goes), the request, the
    environment and database it measures, where it works and stores, how it is shown, and
    what may end it early."""

    rec: RunRecord  # begun: has its id
    spec: RunRequest
    env: Environment
    dbname: str
    conninfo: str
    work: Path  # the run's scratch directory
    archive: RunStore
    console: Console
    live: bool  # the live figures on a terminal
    stop_if: StopIf | None = None  # a reason to stop early (a study's guardrail), or None
