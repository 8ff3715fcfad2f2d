"""The study page: the iteration table and chart, or the sweep chart and table.

The tables are the study report's own (pgrig.reports.iteration / .sweep build a Document from
pgrig.reports.summary), so the page and the report always say the same thing; this module only
swaps the report's matplotlib figures for inline SVG charts drawn from the same summary, and
turns run ids into links.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from pgrig.archive.records import StudyRecord
from pgrig.reports import document, summary
from pgrig.web.svg import Chart, Line, render

# Report cell styles → the page's CSS classes.
CELL_STYLES = {"good": "good", "bad": "bad", "neutral": "same", "muted": "muted", "warn": "warn"}


@dataclass
class StudyPage:
    record: StudyRecord
    kind: str
    title: str
    subtitle: str | None
    charts: list[Markup]
    sections: list[document.Section]  # the report's sections, figures left out
    total_runs: int
    points: int


def build(record: StudyRecord, archive: Any) -> StudyPage:
    """Everything the page shows, from the archive (series are read for run stability)."""
    from pgrig.reports import iteration, sweep  # matplotlib comes with them: load on first use

    data = summary.load_study(archive, record.name, with_series=True)
    spec = data.spec
    if spec.kind == "sweep" and spec.sweep is not None:
        doc, charts = sweep.build(data), sweep_charts(data)
    else:
        doc, charts = iteration.build(data), iteration_charts(data)
    sections = [
        document.Section(s.title, [b for b in s.blocks if not isinstance(b, document.Figure)])
        for s in doc.sections
    ]
    return StudyPage(
        record=record,
        kind=spec.kind,
        title=doc.title,
        subtitle=doc.subtitle,
        charts=charts,
        sections=sections,
        total_runs=sum(len(p.runs) for p in data.points) + len(data.orphans),
        points=len(data.points),
    )


def block_kind(block: Any) -> str:
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


def iteration_charts(data: summary.StudyData) -> list[Markup]:
    """TPS per iteration: the robust centre as a line, every repeat as a dot."""
    labels = [f"{p.point.index}: {p.point.label}" for p in data.points]
    xs = list(range(len(data.points)))
    centre = [p.tps.center if p.tps else None for p in data.points]
    lo = [p.tps.lower if p.tps else None for p in data.points]
    hi = [p.tps.upper if p.tps else None for p in data.points]
    rx: list[float | None] = []
    ry: list[float | None] = []
    for i, p in enumerate(data.points):
        for r in p.ok:
            if r.tps is not None:
                rx.append(i)
                ry.append(r.tps)
    lines = [
        Line("TPS (centre of repeats)", xs, centre, markers=True),
        Line("bounds", xs, lo, color="#9aa7b8", dashed=True),
        Line("bounds", xs, hi, color="#9aa7b8", dashed=True, legend=False),
        Line("repeats", rx, ry, color="#f28e2b", markers=True, line=False),
    ]
    tps_chart = Chart(
        "TPS per iteration", lines, y_label="transactions/s", x_categories=labels, height=280
    )
    out = [render(tps_chart)]
    p95 = [p.latency.get("p95") for p in data.points]
    if any(v is not None for v in p95):
        lat_lines = [
            Line(q, xs, [p.latency.get(q) for p in data.points], markers=True)
            for q in ("p50", "p95", "p99")
            if any(p.latency.get(q) is not None for p in data.points)
        ]
        out.append(
            render(
                Chart(
                    "Latency per iteration",
                    lat_lines,
                    y_label="ms",
                    y_unit="ms",
                    x_categories=labels,
                )
            )
        )
    return out


def sweep_charts(data: summary.StudyData) -> list[Markup]:
    """TPS (and p95 latency) against the x dimension, one line per combination of the others."""
    sweep = data.spec.sweep
    assert sweep is not None
    xs_values = list(sweep.dimension(sweep.x).values)
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in xs_values)
    categories = None if numeric else [str(v) for v in xs_values]

    def xpos(v: Any) -> float:
        return float(v) if numeric else float(xs_values.index(v))

    groups: dict[str, list[summary.PointSummary]] = {}
    for ps in data.points:
        groups.setdefault(ps.point.series_label(sweep.series), []).append(ps)
    tps_lines, lat_lines = [], []
    for label, pts in groups.items():
        pts = sorted(pts, key=lambda ps: xpos(ps.point.coords[sweep.x]))
        x = [xpos(ps.point.coords[sweep.x]) for ps in pts]
        tps_lines.append(
            Line(label, x, [ps.tps.center if ps.tps else None for ps in pts], markers=True)
        )
        lat_lines.append(Line(label, x, [ps.latency.get("p95") for ps in pts], markers=True))
    x_label = sweep.x.removeprefix("settings.")
    ticks = [float(v) for v in xs_values] if numeric and len(xs_values) <= 16 else None
    out = [
        render(
            Chart(
                f"TPS by {x_label}",
                tps_lines,
                x_label=x_label,
                y_label="transactions/s",
                x_categories=categories,
                x_ticks=ticks,
                height=300,
            )
        )
    ]
    if any(v is not None for ln in lat_lines for v in ln.y):
        out.append(
            render(
                Chart(
                    f"Latency p95 by {x_label}",
                    lat_lines,
                    x_label=x_label,
                    y_label="ms",
                    y_unit="ms",
                    x_categories=categories,
                    x_ticks=ticks,
                )
            )
        )
    return out
