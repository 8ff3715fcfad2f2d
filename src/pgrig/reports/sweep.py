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

from pgrig import format
from pgrig.format import pgrig_command
from pgrig.reports.document import Block, Cell, Document, Paragraph, Section, Table
from pgrig.reports.iteration import numeric_columns, view_notes
from pgrig.reports.study_charts import sweep_figures
from pgrig.reports.study_common import (
    cpu_cell,
    harness_section,
    hosts_section,
    runs_section,
    setup_section,
    stability_cell,
    statistics_note,
)
from pgrig.reports.summary import StudyData, fmt
from pgrig.study.plan import display_value
from pgrig.study.spec import Sweep
from pgrig.views import study as study_view
from pgrig.views.study import PointView, axis_value, evidence_cell

NUMERIC_X = ("clients", "threads", "rate")


def build(data: StudyData) -> Document:
    spec = data.spec
    sweep = spec.sweep
    assert sweep is not None
    view = study_view.build(data)
    x_name = sweep.x.removeprefix("settings.")
    categorical = sweep.x not in NUMERIC_X

    groups: dict[str, list[PointView]] = {}
    for p in view.points:
        groups.setdefault(p.summary.point.series_label(sweep.series), []).append(p)

    doc = Document(
        title=f"Study {spec.name}: sweep over {', '.join(d.name for d in sweep.dimensions)}",
        subtitle=spec.description,
        generated_by=pgrig_command("study", "report", spec.name),
    )
    doc.sections.append(setup_section(data))

    figures = sweep_figures(data)
    any_evidence = any(p.evidence for p in view.points)
    any_notes = any(p.note for p in view.points)
    rows = []
    for label, pts in groups.items():
        for p in pts:
            ps = p.summary
            row: list[Any] = []
            if sweep.series:
                row.append(label)
            row += [display_value(ps.point.coords[sweep.x]), Cell(p.tps_lines)]
            row.append(f"{p.ok}/{p.repeats}")
            row += [v.cell() for v in p.verdicts]
            row += [format.ms(p.latency(q)) for q in ("p50", "p95", "p99")]
            row += [cpu_cell(ps), fmt(ps.hit_ratio, 1), stability_cell(ps)]
            if any_evidence:
                row.append(evidence_cell(p))
            if any_notes:
                row.append(p.note or "")
            rows.append(row)
    columns = (["series"] if sweep.series else []) + [x_name, f"{view.figure_label} [bounds]"]
    columns.append("runs")
    columns += view.verdict_titles
    columns += ["p50 ms", "p95 ms", "p99 ms", "CPU us/sy/wa/id %", "hit %", "stability"]
    if any_evidence:
        columns.append("evidence")
    if any_notes:
        columns.append("note")
    numeric = numeric_columns(columns)
    if not categorical:
        numeric.add(columns.index(x_name))
    table = Table.build(columns, rows, numeric=numeric)
    blocks: list[Block] = [
        *figures,
        Paragraph(_comparison_text(sweep), "note"),
        table,
        statistics_note(data),
    ]
    doc.sections.append(Section("Results", [*blocks, *view_notes(view)]))
    hosts = hosts_section(view)  # per point and host: CPU, RTT
    if hosts is not None:
        doc.sections.append(hosts)
    harness = harness_section(view)  # what pgrig itself took, per point
    if harness is not None:
        doc.sections.append(harness)
    doc.sections.append(runs_section(data, "point"))
    return doc


def _comparison_text(sweep: Sweep) -> str:
    """Which comparison the table makes, and whether the study file chose it."""
    axis = sweep.compare_axis()
    if axis is None:
        return (
            f'No comparison column: only {sweep.x} is swept. Set compare = "{sweep.x}" in '
            "[sweep] to compare each value with the first."
        )
    first = axis_value(axis, sweep.dimension(axis).values[0])
    rest = [d.name.removeprefix("settings.") for d in sweep.dimensions if d.name != axis]
    same = f" at the same {', '.join(rest)}" if rest else ""
    text = f"Each point is compared with {first}{same}"
    if sweep.compare is not None:
        return f'{text} (compare = "{axis}" in [sweep]).'
    return (
        f'{text}: compare = "{axis}" by default; set compare in [sweep] to compare along '
        f"another of {', '.join(d.name for d in sweep.dimensions)}."
    )
