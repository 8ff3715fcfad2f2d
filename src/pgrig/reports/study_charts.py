"""The charts of a study, for its report and its web page alike (the page shows these figures).

Iterations: TPS per iteration as bars at the centre of the repeats, whiskers at the bounds, a
dot per repeat and the band of iteration 0 +/- the study's threshold; latency percentiles per
iteration. Sweeps: TPS against the swept variable, one line per series with whiskers at the
bounds (a log axis when the values span 16x or more, e.g. 1 to 1,000 clients); latency
percentiles against it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pgrig.reports.document import Figure
from pgrig.reports.summary import PointSummary, StudyData
from pgrig.reports.svg import INK, PALETTE, Chart, Dash, LegendKey, Reference, Trace

PERCENTILE_DASH: dict[str, Dash] = {"p50": "dotted", "p95": "solid", "p99": "dashed"}
JITTER = 0.07  # horizontal spread of the repeat dots around their iteration


def _centres(points: list[PointSummary]) -> tuple[list, list, list]:
    """Centre, lower and upper bound of each point's TPS (None where it has no result)."""
    return (
        [p.tps.center if p.tps else None for p in points],
        [p.tps.lower if p.tps else None for p in points],
        [p.tps.upper if p.tps else None for p in points],
    )


def _has_latency(points: list[PointSummary]) -> bool:
    return any(p.latency.get(q) is not None for p in points for q in PERCENTILE_DASH)


def iteration_figures(data: StudyData) -> list[Figure]:
    points, threshold = data.points, data.spec.threshold
    labels = [f"{p.point.index}: {p.point.label}" for p in points]
    xs = list(range(len(points)))
    centre, lower, upper = _centres(points)
    rx: list[float | None] = []
    ry: list[float | None] = []
    for i, p in enumerate(points):
        for k, v in enumerate(p.samples):
            rx.append(i + (k - (len(p.samples) - 1) / 2) * JITTER)
            ry.append(v)
    refs = []
    if centre and centre[0] is not None:
        base = centre[0]
        refs.append(
            Reference(base, f"iteration 0 ±{threshold * 100:g}%", base * (1 - threshold),
                      base * (1 + threshold))
        )  # fmt: skip
    tps = Chart(
        "TPS per iteration",
        [
            Trace("TPS (centre of repeats)", xs, centre, lower, upper, kind="bars"),
            Trace("repeats", rx, ry, kind="points", color=INK),
        ],
        y_label="transactions/s",
        y_unit="1/s",
        x_categories=labels,
        references=refs,
        height=300,
    )
    figures = [
        Figure(
            "tps",
            "TPS per iteration: bar at the centre, whiskers at the bounds, a dot per repeat; "
            f"the band is iteration 0 +/- {threshold * 100:g}%",
            tps,
        )
    ]
    if _has_latency(points):
        lines = [
            Trace(q, xs, [p.latency.get(q) for p in points], markers=True)
            for q in PERCENTILE_DASH
            if any(p.latency.get(q) is not None for p in points)
        ]
        chart = Chart(
            "Latency per iteration",
            lines,
            y_label="ms",
            y_unit="ms",
            x_categories=labels,
            height=300,
        )
        figures.append(Figure("latency", "Latency percentiles per iteration", chart))
    return figures


def sweep_figures(data: StudyData) -> list[Figure]:
    sweep = data.spec.sweep
    assert sweep is not None
    values = list(sweep.dimension(sweep.x).values)
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    numeric = len(numbers) == len(values)
    positive = numeric and min(numbers) > 0
    axis: dict[str, Any] = {
        "x_label": sweep.x.removeprefix("settings."),
        "x_categories": None if numeric else [str(v) for v in values],
        "x_ticks": [float(v) for v in numbers] if numeric and len(values) <= 16 else None,
        "x_log": positive and max(numbers) / min(numbers) >= 16,
    }

    def xpos(ps: PointSummary) -> float:
        v = ps.point.coords[sweep.x]
        return float(v) if numeric else float(values.index(v))

    groups: dict[str, list[PointSummary]] = {}
    for ps in data.points:
        groups.setdefault(ps.point.series_label(sweep.series), []).append(ps)
    tps_traces = []
    for label, pts in groups.items():
        pts = sorted(pts, key=xpos)
        centre, lower, upper = _centres(pts)
        tps_traces.append(Trace(label, [xpos(p) for p in pts], centre, lower, upper, markers=True))
    x_name = axis["x_label"]
    per = ", one line per " + ", ".join(s.removeprefix("settings.") for s in sweep.series)
    figures = [
        Figure(
            "tps",
            f"TPS against {x_name}{per if sweep.series else ''}; whiskers at the bounds of the "
            "centre",
            Chart(f"TPS by {x_name}", tps_traces, y_label="transactions/s", y_unit="1/s",
                  height=300, **axis),
        )
    ]  # fmt: skip
    if _has_latency(data.points):
        figures.append(
            Figure(
                "latency",
                f"Latency percentiles against {x_name} (p50 dotted, p95 solid, p99 dashed)",
                _latency_sweep(groups, xpos, axis),
            )
        )
    return figures


def _latency_sweep(
    groups: dict[str, list[PointSummary]], xpos: Callable[[PointSummary], float], axis: dict
) -> Chart:
    """One colour per series, one dash per percentile; the legend names each once."""
    traces, keys = [], []
    for i, (label, pts) in enumerate(groups.items()):
        color = PALETTE[i % len(PALETTE)]
        pts = sorted(pts, key=xpos)
        x = [xpos(p) for p in pts]
        for q, dash in PERCENTILE_DASH.items():
            y = [p.latency.get(q) for p in pts]
            if any(v is not None for v in y):
                traces.append(Trace(f"{label} {q}", x, y, color=color, dash=dash, markers=True))
        if len(groups) > 1:
            keys.append(LegendKey(label, color))
    keys += [LegendKey(q, INK, dash) for q, dash in PERCENTILE_DASH.items()]
    return Chart(
        f"Latency by {axis['x_label']}",
        traces,
        y_label="ms",
        y_unit="ms",
        legend=keys,
        height=300,
        **axis,
    )
