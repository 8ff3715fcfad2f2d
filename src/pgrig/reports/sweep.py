"""The sweep report (seed 003's charts): TPS against the swept variable, one line per series
(e.g. direct vs pgbouncer, read vs write), the table underneath, latency percentiles per point.

Each point is also compared (ratio, bounds, verdict) with the point that differs from it only
along the comparison axis, [sweep].compare, at that axis's first value: with compare = "via",
pgbouncer against direct at the same workload and clients, which answers "is the pooler
faster at 500 clients?" directly. Without compare, Sweep.compare_axis picks one and the report
says which.
"""

from __future__ import annotations

from typing import Any

from pgrig.analysis.compare import Comparison
from pgrig.reports.document import Cell, Document, Paragraph, Section, Table
from pgrig.reports.iteration import comparison_notes, delta_cell, numeric_columns
from pgrig.reports.study_charts import sweep_figures
from pgrig.reports.study_common import (
    cpu_cell,
    runs_section,
    setup_section,
    stability_cell,
    statistics_note,
)
from pgrig.reports.summary import PointSummary, StudyData, compare_points, fmt, fmt_interval
from pgrig.study.plan import display_value
from pgrig.study.spec import Sweep

NUMERIC_X = ("clients", "threads", "rate")


def build(data: StudyData) -> Document:
    spec = data.spec
    sweep = spec.sweep
    assert sweep is not None
    x_name = sweep.x.removeprefix("settings.")
    categorical = sweep.x not in NUMERIC_X

    groups: dict[str, list[PointSummary]] = {}
    for ps in data.points:
        groups.setdefault(ps.point.series_label(sweep.series), []).append(ps)

    doc = Document(
        title=f"Study {spec.name}: sweep over {', '.join(d.name for d in sweep.dimensions)}",
        subtitle=spec.description,
        generated_by=f"pgrig study report {spec.name}",
    )
    doc.sections.append(setup_section(data))

    figures = sweep_figures(data)

    axis = sweep.compare_axis()
    refs = _references(data, axis)
    comparisons: list[Comparison | None] = []
    rows = []
    for label, pts in groups.items():
        for ps in pts:
            row: list[Any] = []
            if sweep.series:
                row.append(label)
            row += [display_value(ps.point.coords[sweep.x]), Cell(fmt_interval(ps.tps))]
            row.append(f"{len(ps.samples)}/{spec.repeats}")
            if axis is not None:
                ref = refs.get(ps.point.key)
                if ref is None or ref is ps:
                    row.append(Cell(["baseline" if ref is ps else "-"], "muted"))
                else:
                    c = compare_points(ref, ps, spec.threshold, spec.misrate)
                    comparisons.append(c)
                    row.append(delta_cell(c))
            row += [fmt(ps.latency.get(q), 2) for q in ("p50", "p95", "p99")]
            row += [cpu_cell(ps), fmt(ps.hit_ratio, 1), stability_cell(ps)]
            rows.append(row)
    columns = (["series"] if sweep.series else []) + [x_name, "TPS [bounds]", "runs"]
    if axis is not None:
        columns.append(f"vs {_axis_value(axis, sweep.dimension(axis).values[0])}")
    columns += ["p50 ms", "p95 ms", "p99 ms", "CPU us/sy/wa/id %", "hit %", "stability"]
    numeric = numeric_columns(columns)
    if not categorical:
        numeric.add(columns.index(x_name))
    table = Table.build(columns, rows, numeric=numeric)
    blocks = [*figures, Paragraph(_comparison_text(sweep), "note"), table, statistics_note(data)]
    doc.sections.append(Section("Results", [*blocks, *comparison_notes(comparisons)]))
    doc.sections.append(runs_section(data, "point"))
    return doc


def _axis_value(axis: str, value: Any) -> str:
    return f"{axis.removeprefix('settings.')}={display_value(value)}"


def _references(data: StudyData, axis: str | None) -> dict[str, PointSummary]:
    """Point key -> the point it is compared with: the same coordinates except `axis`, which
    is at its first value (a point at that value is its own reference)."""
    sweep = data.spec.sweep
    if axis is None or sweep is None:
        return {}
    first = sweep.dimension(axis).values[0]

    def others(ps: PointSummary) -> tuple:
        return tuple(sorted((k, str(v)) for k, v in ps.point.coords.items() if k != axis))

    base = {others(ps): ps for ps in data.points if ps.point.coords.get(axis) == first}
    return {ps.point.key: base[others(ps)] for ps in data.points if others(ps) in base}


def _comparison_text(sweep: Sweep) -> str:
    """Which comparison the table makes, and whether the study file chose it."""
    axis = sweep.compare_axis()
    if axis is None:
        return (
            f'No comparison column: only {sweep.x} is swept. Set compare = "{sweep.x}" in '
            "[sweep] to compare each value with the first."
        )
    first = _axis_value(axis, sweep.dimension(axis).values[0])
    rest = [d.name.removeprefix("settings.") for d in sweep.dimensions if d.name != axis]
    same = f" at the same {', '.join(rest)}" if rest else ""
    text = f"Each point is compared with {first}{same}"
    if sweep.compare is not None:
        return f'{text} (compare = "{axis}" in [sweep]).'
    return (
        f'{text}: compare = "{axis}" by default; set compare in [sweep] to compare along '
        f"another of {', '.join(d.name for d in sweep.dimensions)}."
    )
