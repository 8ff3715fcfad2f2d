"""The study page: the iteration table and chart, or the sweep chart and table.

The page shows the study report's own Document (pgrig.reports.iteration / .sweep build it from
the study view, pgrig.views.study, which `study show` renders too): the same charts, drawn by
the same engine, and the same tables, so the page, the report and the terminal always say the
same thing; this module only lays them out and turns run ids into links.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from pgrig.archive.protocol import RunReader
from pgrig.archive.records import StudyRecord
from pgrig.reports import document, iteration, sweep
from pgrig.reports.svg import render
from pgrig.views.study_data import load_study

# Report cell styles → the page's CSS classes.
CELL_STYLES = {"good": "good", "bad": "bad", "neutral": "same", "muted": "muted", "warn": "warn"}


@dataclass
class StudyPage:
    record: StudyRecord
    kind: str
    title: str
    subtitle: str | None
    charts: list[tuple[Markup, str]]  # (chart, caption)
    sections: list[document.Section]  # the report's sections, figures left out
    total_runs: int
    points: int


def build(record: StudyRecord, archive: RunReader) -> StudyPage:
    """Everything the page shows, from the archive (series are read for run stability)."""
    if record.kind == "tune":
        return _tune_page(record, archive)
    data = load_study(archive, record.name, with_series=True)
    spec = data.spec
    doc = (
        sweep.build(data)
        if spec.kind == "sweep" and spec.sweep is not None
        else iteration.build(data)
    )
    total = sum(len(p.runs) for p in data.points) + len(data.orphans)
    return _page(record, spec.kind, doc, total, len(data.points))


def _tune_page(record: StudyRecord, archive: RunReader) -> StudyPage:
    """A tuning study (pgrig tune): the report's document, like the other kinds."""
    from pgrig.reports.publish import tune_document

    doc = tune_document(archive, record.name)
    total = len(archive.study_runs(record.name))
    return _page(record, record.kind, doc, total, len(record.extra.get("trials") or []))


def _page(
    record: StudyRecord, kind: str, doc: document.Document, total_runs: int, points: int
) -> StudyPage:
    """The page of a report document: its charts apart, its sections without them."""
    return StudyPage(
        record=record,
        kind=kind,
        title=doc.title,
        subtitle=doc.subtitle,
        charts=[(render(f.chart), f.caption) for f in doc.figures()],
        sections=[
            document.Section(s.title, [b for b in s.blocks if not isinstance(b, document.Figure)])
            for s in doc.sections
        ],
        total_runs=total_runs,
        points=points,
    )


def block_kind(block: document.Block) -> str:
    """For the template: which macro renders this report block."""
    return type(block).__name__.lower()


def cell_class(cell: document.Cell, column: int, table: document.Table) -> str:
    classes = ["n"] if column in table.numeric else []
    if cell.style:
        classes.append(CELL_STYLES.get(cell.style, ""))
    return " ".join(c for c in classes if c)


def run_id_column(table: document.Table) -> int | None:
    """The column holding run ids (the report's runs table), to link them to run pages."""
    return 0 if table.columns and table.columns[0] == "run" else None
