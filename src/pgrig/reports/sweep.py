"""The sweep report (seed 003's charts): TPS against the swept variable, one line per series
(e.g. direct vs pgbouncer, read vs write), the table underneath, latency percentiles per point.

With several series, each point is also compared with the first series at the same x (ratio
with bounds and a verdict), which answers "is the pooler faster at 500 clients?" directly.
"""

from __future__ import annotations

from typing import Any

from pgrig.reports.document import Cell, Document, Section, Table
from pgrig.reports.iteration import delta_cell, numeric_columns
from pgrig.reports.study_charts import sweep_figures
from pgrig.reports.study_common import (
    cpu_cell,
    runs_section,
    setup_section,
    stability_cell,
    statistics_note,
)
from pgrig.reports.summary import PointSummary, StudyData, delta, fmt, fmt_interval
from pgrig.study.plan import display_value

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
    labels = list(groups)
    baseline = labels[0]

    doc = Document(
        title=f"Study {spec.name}: sweep over {', '.join(d.name for d in sweep.dimensions)}",
        subtitle=spec.description,
        generated_by=f"pgrig study report {spec.name}",
    )
    doc.sections.append(setup_section(data))

    figures = sweep_figures(data)

    base_at = {ps.point.coords[sweep.x]: ps for ps in groups[baseline]}
    multi = len(labels) > 1
    rows = []
    for label, pts in groups.items():
        for ps in pts:
            row: list[Any] = []
            if sweep.series:
                row.append(label)
            row += [display_value(ps.point.coords[sweep.x]), Cell(fmt_interval(ps.tps))]
            row.append(f"{len(ps.samples)}/{spec.repeats}")
            if multi:
                ref = base_at.get(ps.point.coords[sweep.x])
                if label == baseline or ref is None:
                    row.append(Cell(["baseline" if label == baseline else "-"], "muted"))
                else:
                    row.append(
                        delta_cell(delta(ref.samples, ps.samples, spec.threshold, spec.misrate))
                    )
            row += [fmt(ps.latency.get(q), 2) for q in ("p50", "p95", "p99")]
            row += [cpu_cell(ps), fmt(ps.hit_ratio, 1), stability_cell(ps)]
            rows.append(row)
    columns = (["series"] if sweep.series else []) + [x_name, "TPS [bounds]", "runs"]
    if multi:
        columns.append(f"vs {baseline}")
    columns += ["p50 ms", "p95 ms", "p99 ms", "CPU us/sy/wa/id %", "hit %", "stability"]
    numeric = numeric_columns(columns)
    if not categorical:
        numeric.add(columns.index(x_name))
    table = Table.build(columns, rows, numeric=numeric)
    doc.sections.append(Section("Results", [*figures, table, statistics_note(data)]))
    doc.sections.append(runs_section(data, "point"))
    return doc
