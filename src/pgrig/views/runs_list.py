"""The runs list computed once: `pgrig runs list` and the web's /runs show these columns with
these cells (the CLI in priority order, dropping the last ones on a narrow terminal; the page in
reading order, with links and sorting). Cells are text formatted by pgrig/format.py.

- The headline figure is record/figures.headline's: NOPM for TPC-C runs, a TPC-H run's
  Power@Size, Throughput@Size or QphH@Size (with its unit), TPS for the rest; the CLI gives TPS
  and NOPM a column each (a TPC-H run, which has no TPS, its figure in the tps column), the
  page one "Result" cell with the headline first.
- A run whose environment was changed under it (`--force`: its `changed_under_run` events)
  says so beside its status, "ok (changed)", on both surfaces: its figures mix two
  configurations (the run itself says which).
- The duration is the measured window (measured_s): the time the run's figures rest on (TPS is
  its transactions over it), known for transaction-bound runs too and for runs that ended early;
  a run that measured nothing shows its planned duration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pgrig import format as fmt
from pgrig.archive.records import RunRecord
from pgrig.record.figures import headline, headline_text
from pgrig.record.host_docs import host_cpus
from pgrig.record.protocol import RunReader
from pgrig.views import backup_figures

CHANGED = " (changed)"  # beside the status of a run changed under it (changed_under_run)
NOTE_CHARS = 60  # a note is cut to this many characters in the list (the run shows it whole)


@dataclass(frozen=True)
class Column:
    key: str
    heading: str  # the CLI's header; the page's is in PAGE_HEADINGS
    numeric: bool = False
    optional: bool = False  # shown only when a run of the list has a value in it


# In the CLI's priority order: on a narrow terminal the last ones are dropped whole.
COLUMNS: tuple[Column, ...] = (
    Column("id", "id", numeric=True),
    Column("status", "status"),
    Column("tps", "tps", numeric=True),
    Column("nopm", "nopm", numeric=True, optional=True),  # TPC-C: New-Order transactions/min
    Column("started", "started"),
    Column("env", "env"),
    Column("workload", "workload"),
    Column("backup", "backup", optional=True),  # backup and restore runs: type, size, duration
    Column("clients", "clients", numeric=True),
    Column("p95", "p95 ms", numeric=True),
    Column("engine", "engine"),
    Column("failed", "failed", numeric=True),
    Column("duration", "duration", numeric=True),
    Column("cpus", "cpus", numeric=True),
    Column("volume", "volume", numeric=True),
    Column("study", "study", optional=True),
    Column("note", "note", optional=True),
)
BY_KEY = {c.key: c for c in COLUMNS}

# The page's reading order and headings: "result" is the tps and nopm columns in one cell.
PAGE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "ID"),
    ("started", "Date (UTC)"),
    ("engine", "Engine"),
    ("workload", "Workload"),
    ("result", "Result"),
    ("cpus", "CPUs"),
    ("clients", "Clients"),
    ("duration", "Duration"),
    ("volume", "Volume"),
    ("p95", "p95 ms"),
    ("failed", "Failed"),
    ("status", "Status"),
    ("env", "Environment"),
    ("backup", "Backup"),
    ("study", "Study"),
    ("note", "Note / tags"),
)


@dataclass(frozen=True)
class Cell:
    text: str
    more: str = ""  # said after the text, less loudly: "/4" threads, " s10" scale

    def __str__(self) -> str:
        return self.text + self.more


@dataclass(frozen=True)
class RunRow:
    rec: RunRecord
    cells: dict[str, Cell]
    headline: Cell  # the headline figure: text and its label ("4,322", " TPS")

    def text(self, key: str) -> str:
        return str(self.cells[key])


def duration_of(rec: RunRecord) -> float | None:
    """The measured window, else the planned duration (a run that measured nothing)."""
    return rec.measured_s if rec.measured_s is not None else rec.duration_s


def _workload_more(r: RunRecord) -> str:
    data = r.data_scale()
    scale = f" {'SF' if data[0] == 'SF' else 's'}{data[1]:g}" if data else ""
    via = f" via {r.via}" if r.via and r.via != "direct" else ""
    return scale + via


def row(r: RunRecord) -> RunRow:
    figure = headline(r)
    value = figure.value(r)
    text, unit = headline_text(r, figure)
    cells = {
        "id": Cell(str(r.id)),
        "status": Cell(r.status, CHANGED if r.extra.get("changed_under_run") else ""),
        "tps": Cell(fmt.number(r.tps))
        if figure.key in ("tps", "nopm") or value is None
        else Cell(text, f" {unit}"),
        "nopm": Cell(fmt.number(r.nopm, 0) if r.nopm is not None else ""),
        "started": Cell(fmt.timestamp(r.started_at)),
        "env": Cell(r.env_name),
        "workload": Cell(r.workload, _workload_more(r)),
        "backup": Cell(backup_figures.summary(r)),
        "clients": Cell(str(r.clients), f"/{r.threads}"),
        "p95": Cell(fmt.ms(r.latency.p95)),
        "engine": Cell(fmt.engine(r.engine, r.server_version)),
        "failed": Cell(fmt.number(r.failed)),
        "duration": Cell(fmt.duration(duration_of(r))),
        "cpus": Cell(fmt.text(host_cpus(r.host))),
        "volume": Cell(fmt.size(r.db_size_bytes)),
        "study": Cell(f"{r.study}:{r.study_point or ''}#{r.repeat}" if r.study else ""),
        "note": Cell((r.note or "").replace("\n", " ")[:NOTE_CHARS]),
    }
    if value is None:
        return RunRow(r, cells, Cell(fmt.MISSING))
    if figure.key in cells:  # TPS and NOPM: as their own columns show them
        return RunRow(r, cells, Cell(cells[figure.key].text, f" {figure.label}"))
    return RunRow(r, cells, Cell(text, f" {unit}"))


def with_documents(archive: RunReader, runs: list[RunRecord]) -> list[RunRecord]:
    """Light records (list_runs) given the documents the list's cells read: a backup run's
    figures, a TPC-H run's (its headline), the changes forced under any run (its status says
    so: any run may have them, so they are always read, in one query). The CLI and the page
    both call this before rows()."""
    archive.add_warnings(runs)  # with the archive's LIGHT_EXTRA_KEYS
    return runs


def rows(runs: Sequence[RunRecord]) -> list[RunRow]:
    return [row(r) for r in runs]


def shown_columns(runs_rows: Sequence[RunRow]) -> list[Column]:
    """The columns with something to show: an optional one only when a run has a value."""
    return [c for c in COLUMNS if not c.optional or any(r.cells[c.key].text for r in runs_rows)]
