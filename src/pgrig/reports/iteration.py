"""The iteration report (seed 000's table, done properly).

Per iteration: TPS centre of the repeats with its bounds, the change against the previous
iteration and against iteration 0 (each a ratio with bounds and a verdict at the study's
threshold), what was changed, p95 latency, CPU and the buffer-cache hit ratio; a chart of TPS
per iteration with bounds and every repeat. The evidence column says what the runs show
(requested checkpoints, autovacuum, sequential against index scans in sampled plans, the top
wait: pgrig.insights.changes.evidence) and flags a host that differed from iteration 0's.
"""

from __future__ import annotations

from pgrig import format
from pgrig.analysis.compare import Comparison
from pgrig.format import pgrig_command
from pgrig.reports.document import Cell, CellValue, Document, Paragraph, Section, Table
from pgrig.reports.study_charts import iteration_figures
from pgrig.reports.study_common import (
    cpu_cell,
    harness_section,
    hosts_section,
    runs_section,
    setup_section,
    stability_cell,
    statistics_note,
)
from pgrig.reports.summary import StudyData, fmt, verdict_style
from pgrig.views import study as study_view
from pgrig.views.study import changes_lines, evidence_cell

__all__ = ["build", "changes_lines", "comparison_notes", "delta_cell", "numeric_columns"]

NUMERIC_HEADERS = ("#", "TPS [bounds]", "runs", "NOPM", "p50 ms", "p95 ms", "p99 ms", "hit %")


def numeric_columns(columns: list[str]) -> set[int]:
    """Right-aligned columns: figures and comparisons."""
    return {
        i
        for i, c in enumerate(columns)
        if c in NUMERIC_HEADERS or c.startswith("vs ") or c.endswith(" [bounds]")
    }


def delta_cell(c: Comparison | None) -> Cell:
    """'x1.087 [1.061, 1.112]' over the verdict; ' *' when the bounds are the widest possible."""
    if c is None:
        return Cell.of(None)
    star = " *" if c.insufficient else ""
    return Cell([c.ratio_text(), c.verdict_text() + star], verdict_style(c.verdict))


def comparison_notes(comparisons: list[Comparison | None]) -> list[Paragraph]:
    """What the table's comparison cells need said once (views.study.comparison_notes)."""
    return [Paragraph(text, "note") for text in study_view.comparison_notes(comparisons)]


def view_notes(view: study_view.StudyView) -> list[Paragraph]:
    """The best point against the runner-up, then the notes the verdict cells need."""
    best = view.best_text
    out = [Paragraph(best[:1].upper() + best[1:] + ".", "note")] if best else []
    return out + [Paragraph(text, "note") for text in view.notes]


def build(data: StudyData) -> Document:
    spec = data.spec
    view = study_view.build(data)
    points = view.points
    doc = Document(
        title=f"Study {spec.name}: {len(points)} iterations",
        subtitle=spec.description,
        generated_by=pgrig_command("study", "report", spec.name),
    )
    doc.sections.append(setup_section(data))

    rows = []
    prev = None
    any_notes = any(p.note for p in points)
    any_nopm = any(p.summary.nopm is not None for p in points)
    any_evidence = any(r.insights or r.host for p in points for r in p.summary.ok)
    for p in points:
        ps = p.summary
        it = spec.iterations[ps.point.index]
        row: list[CellValue] = [
            str(p.index),
            p.label,
            changes_lines(ps.point, prev.point if prev else None, it.run_changes),
            Cell(p.tps_lines),
            f"{p.ok}/{p.repeats}",
            *(v.cell() for v in p.verdicts),
        ]
        if any_nopm:
            row.append(fmt(ps.nopm, 0))
        row += [
            format.ms(p.latency("p95")),
            cpu_cell(ps),
            fmt(ps.hit_ratio, 1),
            stability_cell(ps),
        ]
        if any_evidence:
            row.append(evidence_cell(p))
        if any_notes:
            row.append(p.note or "")
        rows.append(row)
        prev = ps
    columns = ["#", "iteration", "changes", f"{view.figure_label} [bounds]", "runs"]
    columns += view.verdict_titles
    if any_nopm:
        columns.append("NOPM")
    columns += ["p95 ms", "CPU us/sy/wa/id %", "hit %", "stability"]
    if any_evidence:
        columns.append("evidence")
    if any_notes:
        columns.append("note")
    table = Table.build(columns, rows, numeric=numeric_columns(columns))

    results = Section(
        "Results",
        [*iteration_figures(data), table, statistics_note(data), *view_notes(view)],
    )
    doc.sections.append(results)
    hosts = hosts_section(view)  # per point and host: CPU, RTT
    if hosts is not None:
        doc.sections.append(hosts)
    harness = harness_section(view)  # what pgrig itself took, per point
    if harness is not None:
        doc.sections.append(harness)
    doc.sections.append(runs_section(data, "iteration"))
    return doc
