"""The iteration report (seed 000's table, done properly).

Per iteration: TPS centre of the repeats with its bounds, the change against the previous
iteration and against iteration 0 (each a ratio with bounds and a verdict at the study's
threshold), what was changed, p95 latency, CPU and the buffer-cache hit ratio; a chart of TPS
per iteration with bounds and every repeat.
"""

from __future__ import annotations

from pgrig.reports.document import Cell, Document, Paragraph, Section, Table
from pgrig.reports.study_charts import iteration_figures
from pgrig.reports.study_common import (
    cpu_cell,
    runs_section,
    setup_section,
    stability_cell,
    statistics_note,
)
from pgrig.reports.summary import (
    NO_VERDICT,
    Delta,
    PointSummary,
    StudyData,
    delta,
    fmt,
    fmt_interval,
)
from pgrig.reports.summary import verdict_style as style_of
from pgrig.study.plan import Point


def changes_lines(point: Point, previous: Point | None, run_changes: dict) -> list[str]:
    """What this iteration changed: settings (None = back to the profile), run, actions."""
    lines = []
    for name, value in point.changes.items():
        lines.append(f"{name}={value}" if value is not None else f"{name}: reset")
    if previous is not None and previous.env_key != point.env_key:
        lines.insert(0, f"environment: {point.env_key}")
    for key, value in run_changes.items():
        lines.append(f"run.{key}={value}")
    if point.actions:
        lines.append("actions: " + ", ".join(point.actions))
    return lines or ["(no change)"]


NUMERIC_HEADERS = ("#", "TPS [bounds]", "runs", "NOPM", "p50 ms", "p95 ms", "p99 ms", "hit %")


def numeric_columns(columns: list[str]) -> set[int]:
    """Right-aligned columns: figures and comparisons."""
    return {i for i, c in enumerate(columns) if c in NUMERIC_HEADERS or c.startswith("vs ")}


def delta_cell(d: Delta | None) -> Cell:
    if d is None:
        return Cell.of(None)
    star = " *" if d.insufficient and d.verdict != NO_VERDICT else ""
    return Cell([d.pct(), d.verdict + star], style_of(d.verdict) or "muted")


def build(data: StudyData) -> Document:
    spec = data.spec
    points = data.points
    doc = Document(
        title=f"Study {spec.name}: {len(points)} iterations",
        subtitle=spec.description,
        generated_by=f"pgrig study report {spec.name}",
    )
    doc.sections.append(setup_section(data))

    base = points[0].samples if points else []
    rows = []
    prev: PointSummary | None = None
    any_notes = any(ps.point.note for ps in points)
    any_nopm = any(ps.nopm is not None for ps in points)
    for ps in points:
        it = spec.iterations[ps.point.index]
        d_prev = delta(prev.samples, ps.samples, spec.threshold, spec.misrate) if prev else None
        d_base = (
            delta(base, ps.samples, spec.threshold, spec.misrate) if ps.point.index > 0 else None
        )
        row = [
            str(ps.point.index),
            ps.point.label,
            changes_lines(ps.point, prev.point if prev else None, it.run_changes),
            Cell(fmt_interval(ps.tps)),
            f"{len(ps.samples)}/{spec.repeats}",
            delta_cell(d_prev),
            delta_cell(d_base),
        ]
        if any_nopm:
            row.append(fmt(ps.nopm, 0))
        row += [
            fmt(ps.latency.get("p95"), 2),
            cpu_cell(ps),
            fmt(ps.hit_ratio, 1),
            stability_cell(ps),
        ]
        if any_notes:
            row.append(ps.point.note or "")
        rows.append(row)
        prev = ps
    columns = ["#", "iteration", "changes", "TPS [bounds]", "runs", "vs previous", "vs iteration 0"]
    if any_nopm:
        columns.append("NOPM")
    columns += ["p95 ms", "CPU us/sy/wa/id %", "hit %", "stability"]
    if any_notes:
        columns.append("note")
    table = Table.build(columns, rows, numeric=numeric_columns(columns))

    results = Section("Results", [*iteration_figures(data), table, statistics_note(data)])
    if any(c.lines[-1].endswith(" *") for row in table.rows for c in row if c.lines):
        results.blocks.append(
            Paragraph(
                "* too few repeats for the requested bounds: the widest bounds are shown and "
                "the verdict is weaker than stated; add repeats for a firm answer.",
                "note",
            )
        )
    doc.sections.append(results)
    doc.sections.append(runs_section(data, "iteration"))
    return doc
