"""The iteration report (seed 000's table, done properly).

Per iteration: TPS centre of the repeats with its bounds, the change against the previous
iteration and against iteration 0 (each a ratio with bounds and a verdict at the study's
threshold), what was changed, p95 latency, CPU and the buffer-cache hit ratio; a chart of TPS
per iteration with bounds and every repeat. The evidence column says what the runs show
(requested checkpoints, autovacuum, sequential against index scans in sampled plans, the top
wait: pgrig.insights.changes.evidence) and flags a host that differed from iteration 0's.
"""

from __future__ import annotations

from pgrig.analysis.compare import BLOCK_S, Comparison
from pgrig.reports.document import Cell, CellValue, Document, Paragraph, Section, Table
from pgrig.reports.study_charts import iteration_figures
from pgrig.reports.study_common import (
    cpu_cell,
    evidence_cell,
    runs_section,
    setup_section,
    stability_cell,
    statistics_note,
)
from pgrig.reports.summary import (
    PointSummary,
    StudyData,
    compare_points,
    fmt,
    fmt_interval,
    verdict_style,
)
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


def delta_cell(c: Comparison | None) -> Cell:
    """'x1.087 [1.061, 1.112]' over the verdict; ' *' when the bounds are the widest possible."""
    if c is None:
        return Cell.of(None)
    star = " *" if c.insufficient else ""
    return Cell([c.ratio_text(), c.verdict_text() + star], verdict_style(c.verdict))


def comparison_notes(comparisons: list[Comparison | None]) -> list[Paragraph]:
    """What the table's comparison cells need said once: the widest bounds ('*'), indicative
    comparisons of single runs, and how to get a verdict where there is none."""
    done = [c for c in comparisons if c is not None]
    notes = []
    if any(c.insufficient for c in done):
        notes.append(
            "* too few values for the requested bounds: the widest bounds are shown (they hold "
            "less often than asked) and the verdict is weaker than stated; add repeats."
        )
    if any(c.indicative for c in done):
        notes.append(
            f"Indicative: single runs compared by the means of blocks of at least "
            f"{BLOCK_S:g} s of their per-second TPS; one run cannot show how much a repeat "
            "would differ, so repeat the runs for a firm verdict."
        )
    notes += sorted({f"No verdict: {c.advice}." for c in done if c.verdict is None and c.advice})
    return [Paragraph(text, "note") for text in notes]


def build(data: StudyData) -> Document:
    spec = data.spec
    points = data.points
    doc = Document(
        title=f"Study {spec.name}: {len(points)} iterations",
        subtitle=spec.description,
        generated_by=f"pgrig study report {spec.name}",
    )
    doc.sections.append(setup_section(data))

    rows = []
    comparisons: list[Comparison | None] = []
    prev: PointSummary | None = None
    any_notes = any(ps.point.note for ps in points)
    any_nopm = any(ps.nopm is not None for ps in points)
    any_evidence = any(r.insights or r.host for ps in points for r in ps.ok)
    for ps in points:
        it = spec.iterations[ps.point.index]
        d_prev = compare_points(prev, ps, spec.threshold, spec.misrate) if prev else None
        d_base = (
            compare_points(points[0], ps, spec.threshold, spec.misrate)
            if ps.point.index > 0
            else None
        )
        comparisons += [d_prev, d_base]
        row: list[CellValue] = [
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
        if any_evidence:
            row.append(evidence_cell(ps, points[0]))
        if any_notes:
            row.append(ps.point.note or "")
        rows.append(row)
        prev = ps
    columns = ["#", "iteration", "changes", "TPS [bounds]", "runs", "vs previous", "vs iteration 0"]
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
        [*iteration_figures(data), table, statistics_note(data), *comparison_notes(comparisons)],
    )
    doc.sections.append(results)
    doc.sections.append(runs_section(data, "iteration"))
    return doc
