"""The study page: the iteration table and chart, or the sweep chart and table.

The figures (robust centres over repeats, bounds, deltas and verdicts between points, run
stability) come from pgrig.reports.summary, the same code the study reports use; this module
only lays them out as rows and draws the charts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from pgrig.archive.records import RunRecord, StudyRecord
from pgrig.reports import summary
from pgrig.web import format as fmt
from pgrig.web.compare_view import verdict_style
from pgrig.web.svg import Chart, Line, render


@dataclass
class RunLink:
    id: int
    status: str
    tps: float | None


@dataclass
class PointRow:
    index: int
    key: str
    label: str
    tps: str  # centre
    tps_bounds: str  # [lower, upper] over repeats
    n: int
    delta_prev: summary.Delta | None
    delta_first: summary.Delta | None
    changes: list[str]
    latency: dict[str, float | None]
    cpu: dict[str, float | None]
    hit_ratio: float | None
    stability: str
    runs: list[RunLink]
    note: str | None = None
    coords: dict[str, str] = field(default_factory=dict)

    def style(self, d: summary.Delta | None) -> str:
        return verdict_style(d.verdict) if d else ""


@dataclass
class StudyPage:
    record: StudyRecord
    kind: str
    description: str | None
    rows: list[PointRow]
    charts: list[Markup]
    x_name: str | None  # sweeps: the dimension on the x axis
    orphans: list[RunRecord]
    total_runs: int
    threshold: float
    misrate: float
    error: str | None = None  # the stored study file no longer parses


def build(record: StudyRecord, archive: Any) -> StudyPage:
    """Everything the page shows, from the archive (series are read for run stability)."""
    data = summary.load_study(archive, record.name, with_series=True)
    spec = data.spec
    rows = [_row(ps, data.points, i, spec) for i, ps in enumerate(data.points)]
    if spec.kind == "sweep" and spec.sweep is not None:
        charts = sweep_charts(data)
        x_name = spec.sweep.x
    else:
        charts = iteration_charts(data)
        x_name = None
    return StudyPage(
        record=record,
        kind=spec.kind,
        description=spec.description,
        rows=rows,
        charts=charts,
        x_name=x_name,
        orphans=data.orphans,
        total_runs=sum(len(p.runs) for p in data.points) + len(data.orphans),
        threshold=spec.threshold,
        misrate=spec.misrate,
    )


def _row(
    ps: summary.PointSummary, points: list[summary.PointSummary], i: int, spec: Any
) -> PointRow:
    p = ps.point
    prev = points[i - 1] if i > 0 else None
    first = points[0]
    iterations = spec.kind == "iterations"
    delta_prev = (
        summary.delta(prev.samples, ps.samples, spec.threshold, spec.misrate)
        if iterations and prev is not None
        else None
    )
    delta_first = (
        summary.delta(first.samples, ps.samples, spec.threshold, spec.misrate)
        if iterations and i > 0
        else None
    )
    bounds = ""
    if ps.tps is not None:
        bounds = f"[{fmt.num(ps.tps.lower)}, {fmt.num(ps.tps.upper)}]"
        if ps.tps.insufficient:
            bounds += " (range)"
    stab = [s.describe() for s in ps.stability if s.cv is not None]
    drift = ps.drift_runs
    stability = (
        f"max CV {ps.max_cv * 100:.1f}%" if ps.max_cv is not None else (stab[0] if stab else "–")
    )
    if drift:
        stability += f", drift in {drift} run{'s' if drift > 1 else ''}"
    return PointRow(
        index=p.index,
        key=p.key,
        label=p.label,
        tps=fmt.num(ps.tps.center) if ps.tps else "–",
        tps_bounds=bounds,
        n=ps.tps.n if ps.tps else 0,
        delta_prev=delta_prev,
        delta_first=delta_first,
        changes=_changes(p.changes) if iterations else [],
        latency=ps.latency,
        cpu=ps.cpu,
        hit_ratio=ps.hit_ratio,
        stability=stability,
        runs=[RunLink(r.id or 0, r.status, r.tps) for r in ps.runs],
        note=p.note,
        coords={k: str(v) for k, v in p.coords.items()},
    )


def _changes(changes: dict[str, str | None]) -> list[str]:
    return [f"{k} = {v}" if v is not None else f"{k} reset" for k, v in changes.items()]


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
    out = [
        render(
            Chart(
                f"TPS by {x_label}",
                tps_lines,
                x_label=x_label,
                y_label="transactions/s",
                x_categories=categories,
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
                )
            )
        )
    return out


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and math.isfinite(v)
