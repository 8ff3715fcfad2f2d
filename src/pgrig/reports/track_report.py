"""The report of a version series: the chart with its change points, a table per version with
bounds, the steps between versions, bisections, and each point's settings and environment.

The text is the page model of views/track.py (what `track show` and the web page render); the
chart is drawn here from the same SeriesView (track/figures.py).
"""

from __future__ import annotations

import itertools
from typing import Any

from pgrig.reports.document import Block, Document, Figure, KeyValues, Paragraph, Section, Table
from pgrig.reports.svg import INK, PALETTE, Chart, Trace
from pgrig.track.figures import SeriesView
from pgrig.views import track as track_page

CHANGE_COLOR = PALETTE[2]


def build(v: SeriesView) -> Document:
    """The report: the page model's items and tables (views/track.py), with the chart."""
    page = track_page.build(v)
    doc = Document(page.title, f"{page.status}; {page.subtitle}")
    doc.sections.append(Section("Setup", [KeyValues(page.about)]))
    blocks: list[Any] = []
    chart = series_chart(v)
    if chart is not None:
        blocks.append(Figure("series", "", chart))
    blocks.append(page.versions)
    blocks += [Paragraph(c, "warn") for c in page.caveats]
    blocks.append(Paragraph(page.verdict_note, "note"))
    doc.sections.append(Section("Series", blocks))
    doc.sections.append(Section("Change points", _table_or_note(page.changes)))
    if page.bisections is not None:
        doc.sections.append(Section("Bisections", _table_or_note(page.bisections)))
    env_blocks: list[Any] = _table_or_note(page.environments)
    env_blocks += [Paragraph(w, "warn") for w in page.warnings]
    doc.sections.append(Section("Settings and environment of each point", env_blocks))
    return doc


def _table_or_note(table: Table) -> list[Block]:
    """A table with its note under it; only the note when it has no rows."""
    blocks: list[Block] = [table] if table.rows else []
    if table.note:
        blocks.append(Paragraph(table.note, "note"))
    return blocks


def series_chart(v: SeriesView) -> Chart | None:
    """Centre and bounds per version, every run as a dot, the levels between change points as
    dashed lines, and each change point's first version marked."""
    measured = v.measured()
    if not measured:
        return None
    labels = [p.version for p in measured]
    xs = [float(i) for i in range(len(measured))]
    runs_x: list[float | None] = []
    runs_y: list[float | None] = []
    for i, p in enumerate(measured):
        runs_x += [float(i)] * len(p.values)
        runs_y += list(p.values)
    traces = [
        Trace("runs", runs_x, runs_y, kind="points", color=PALETTE[9]),
        Trace(
            "centre, 95% bounds",
            xs,
            [p.centre for p in measured],
            lower=[p.lower for p in measured],
            upper=[p.upper for p in measured],
            kind="points",
            color=INK,
        ),
    ]
    cuts = [c["position"] for c in v.changes]
    edges = [0, *cuts, len(measured)]
    for k, (a, b) in enumerate(itertools.pairwise(edges)):
        level = [y for p in measured[a:b] for y in p.values]
        mean = sum(level) / len(level) if level else None
        traces.append(
            Trace(
                "level between change points",
                [a - 0.3, b - 0.7],
                [mean, mean],
                color=PALETTE[0],
                dash="dashed",
                legend=k == 0,
            )
        )
    if cuts:
        traces.append(
            Trace(
                "change point (its first version)",
                [float(c) for c in cuts],
                [measured[c].centre for c in cuts],
                kind="points",
                color=CHANGE_COLOR,
            )
        )
    notes = [
        f"change at {c['version']}: "
        + ("from 0 " if c["change_pct"] is None else f"{c['change_pct']:+.1f}% ")
        + f"(confidence {c['confidence'] * 100:.1f}%)"
        for c in v.changes
    ]
    return Chart(
        f"{v.metric_label} per version",
        traces,
        x_label="PostgreSQL version",
        y_label=v.metric_label,
        y_unit="1/s" if v.metric == "tps" else "ms",
        x_categories=labels,
        y_from_zero=True,
        height=300,
        notes=notes,
    )
