"""Reports on runs outside a study: one run, or a comparison of groups of runs.

A single run: its figures, the stability line, the charts of its run page (TPS, latency and
failures over time with the warm-up shaded, then the OS, PostgreSQL and pooler metrics),
per-script figures and the settings that differ from the defaults. A comparison: groups of
repeated runs side by side, each against the first group (the comparison engine's ratio,
bounds and verdict: analysis/compare.py), the settings that differ, and the compare page's
overlays of each group's first run.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pgrig import format as fmt_rules
from pgrig.analysis.compare import Comparison
from pgrig.archive.records import RunRecord
from pgrig.format import pgrig_command
from pgrig.reports import run_charts
from pgrig.reports.document import (
    Block,
    Cell,
    Document,
    Figure,
    KeyValues,
    Paragraph,
    Section,
    Table,
)
from pgrig.reports.iteration import comparison_notes, delta_cell
from pgrig.reports.study_common import verdict_rules
from pgrig.reports.summary import (
    fmt,
    fmt_interval,
    interval,
    run_stability,
    short_version,
)
from pgrig.reports.svg import Chart
from pgrig.study.plan import display_value
from pgrig.views import chbench, compare, evidence, run_hosts, run_summary
from pgrig.views.settings import settings_diff

if TYPE_CHECKING:
    from pgrig.views.compare import Changes


def summary_items(rec: RunRecord) -> list[tuple[str, str]]:
    """The run summary (pgrig.views.run_summary): what `runs show` and the run page show."""
    v = run_summary.build(rec)
    items = [("status", v.status + (f": {v.error}" if v.error else "")), *v.items]
    if v.command:
        items.append(("command", v.command))
    return items


def _figures(prefix: str, charts: list[Chart]) -> list[Figure]:
    """Charts as report figures, each with a file name of its own (prefix + title)."""
    out: list[Figure] = []
    used: set[str] = set()
    for chart in charts:
        name = prefix + (re.sub(r"[^a-z0-9]+", "-", chart.title.lower()).strip("-") or "chart")
        while name in used:
            name += "-2"
        used.add(name)
        out.append(Figure(name, "", chart))
    return out


def _load_section(rec: RunRecord) -> Section | None:
    """The run page's first charts: throughput, latency and failures over time."""
    load = run_charts.load_charts(rec.series.get("pgbench") or {})
    if not load:
        return None
    note = "Per second; the shaded start is the warm-up, not part of the results."
    return Section("Over time", [*_figures("", load), Paragraph(note, "note")])


def _metric_sections(rec: RunRecord) -> list[Section]:
    """The run page's metric charts: one section per sampler (OS, PostgreSQL, pooler)."""
    sections = []
    for cs in run_charts.metric_chart_sets(rec.series):
        blocks: list[Any] = _figures(f"{cs.kind}-", cs.charts)
        blocks += [Paragraph(n, "warn") for n in cs.notes]
        if cs.quiet:
            blocks.append(Paragraph(f"Zero throughout: {', '.join(cs.quiet)}.", "note"))
        sections.append(Section(cs.title, blocks))
    return sections


def run_document(rec: RunRecord) -> Document:
    doc = Document(
        title=f"Run {rec.id}: {display_value(rec.workload)} on {rec.env_name}",
        subtitle=rec.note,
        generated_by=pgrig_command("report", "run", rec.id),
    )
    stab = run_stability(rec)
    items = summary_items(rec)
    items.append(("stability", stab.describe()))
    if stab.warmup_tps is not None:
        items.append(
            (
                "warm-up",
                f"{stab.warmup_s:g}s at {fmt(stab.warmup_tps)} TPS (per-second mean), "
                f"measured window {fmt(stab.measured_tps)} TPS",
            )
        )
    blocks: list[Any] = [KeyValues(items)]
    blocks += [Paragraph(str(w.get("message")), "warn") for w in rec.warnings()]
    if stab.drift:
        blocks.append(
            Paragraph(
                "Throughput drifts during the measured window: a longer run, or fresh data "
                "for every run, would give a different answer.",
                "warn",
            )
        )
    doc.sections.append(Section("Summary", blocks))
    load = _load_section(rec)
    if load is not None:
        doc.sections.append(load)
    scripts = run_summary.scripts_table(rec)
    if scripts is not None:
        doc.sections.append(Section(scripts.title, [replace(scripts, caption=None)]))
    analytic = chbench.table(rec)  # CH-benCHmark's queries (views/chbench.py)
    if analytic is not None:
        doc.sections.append(Section(analytic.title, [replace(analytic, caption=None)]))
    doc.sections += _metric_sections(rec)
    doc.sections.append(_settings_section(rec))
    doc.sections.append(why_section(rec))
    if rec.host:
        facts = [(k, _short(v)) for k, v in run_summary.host_facts(rec.host)]
        doc.sections.append(Section("Host", [KeyValues(facts)]))
    doc.sections.append(host_checks_section(rec))
    hosts = run_hosts.hosts_table(rec)
    if hosts is not None:
        doc.sections.append(Section("Hosts", text_table_blocks(replace(hosts, caption=None))))
    if rec.artifacts:
        doc.sections.append(
            Section("Artifacts", [KeyValues([(k, str(v)) for k, v in rec.artifacts.items()])])
        )
    return doc


def why_section(rec: RunRecord) -> Section:
    """Why the run performed as it did (insights.summary.why_parts, as the run page shows)."""
    from pgrig.insights.summary import why_parts

    blocks: list[Any] = []
    for part in why_parts(rec.insights):
        if part.reason:
            blocks.append(Paragraph(f"{part.title}: {part.reason}", "note"))
            continue
        lines: list[list[str]] = [[label, text] for label, text in part.lines]
        blocks.append(Table.build([part.title, ""], lines))
        for t in part.tables:
            blocks += text_table_blocks(t)
    blocks += [Paragraph(str(n), "note") for n in (rec.insights or {}).get("notes") or []]
    return Section("Why", blocks)


def text_table_blocks(t: Table) -> list[Block]:
    """An insights table as report blocks: the table captioned with its title and its note,
    or only "title: note" when it has no rows."""
    if not t.rows:
        return [Paragraph(f"{t.title}: {t.note}", "note")] if t.note else []
    blocks: list[Block] = [t]
    if t.note:
        blocks.append(Paragraph(t.note, "note"))
    return blocks


def host_checks_section(rec: RunRecord) -> Section:
    """The host checks recorded at the start of the run (host.checks)."""
    table = run_summary.host_checks_table(rec)
    if table is None:
        text = "No host checks recorded with this run (runs before host checks existed)."
        return Section("Host checks", [Paragraph(text, "note")])
    return Section("Host checks", [replace(table, caption=None)])


def _short(v: object, width: int = 200) -> str:
    s = v if isinstance(v, str) else repr(v)
    return s if len(s) <= width else s[: width - 1] + "…"


def _settings_section(rec: RunRecord) -> Section:
    blocks: list[Any] = []
    layers = [
        (layer, k, v)
        for layer, values in rec.settings_layers.items()
        for k, v in values.items()
        if not k.startswith("__")
    ]
    if layers:
        blocks.append(
            Table.build(
                ["layer", "setting", "value"],
                [[a, b, str(c)] for a, b, c in layers],
                caption="What pgrig set, by layer (later layers win)",
            )
        )
    settings = run_summary.build(rec).settings_table()
    if settings.rows:
        blocks.append(settings)
    if not blocks:
        blocks.append(Paragraph("No settings snapshot was recorded.", "note"))
    return Section("Settings", blocks)


# --- comparison of groups ------------------------------------------------------------------------
def compare_document(
    groups: list[list[RunRecord]], threshold: float = 0.02, misrate: float = 0.05
) -> Document:
    """Each group is repeats of one configuration; group 1 is the baseline. The comparison is
    the view every compare surface renders (pgrig.views.compare); the results table adds the
    TPS centre (a TPC-H run's own figure) of each group with its bounds and the evidence
    beside each verdict."""
    labels = [_group_label(g) for g in groups]
    view = compare.build(groups, threshold, misrate)
    doc = Document(
        title="Comparison: " + " vs ".join(labels),
        generated_by="pgrig report compare",
    )
    p95 = next((m for m in view.metrics if m.key == "latency.p95"), None)
    figure = view.verdict_figure  # TPS, or a TPC-H run's own figure
    rows: list[list[Any]] = []
    comparisons: list[Comparison | None] = []
    for i, (g, label) in enumerate(zip(groups, labels, strict=True)):
        first = g[0]
        vals = [v for r in g if r.status == "ok" and (v := figure.value(r))]
        if i == 0:
            verdict = Cell(["baseline"], "muted")
            lines, warn = evidence.lines(g), False
        else:
            c = view.comparisons[i - 1][figure.key]
            comparisons.append(c)
            verdict = delta_cell(c)
            lines, warn = evidence.against(g, groups[0], labels[0])
        p95_text = fmt_rules.MISSING
        if p95 is not None:
            p95_text = p95.base if i == 0 else p95.others[i - 1].text
        rows.append(
            [
                label,
                f"{first.env_name} ({short_version(first.server_version) or '?'})",
                f"{display_value(first.workload)}, {first.clients} clients",
                f"{len(vals)}/{len(g)}",
                Cell(fmt_interval(interval(vals, misrate))),
                verdict,
                p95_text,
                Cell(lines, "warn" if warn else None) if lines else Cell.of(None),
            ]
        )
    table = Table.build(
        ["runs", "environment", "load", "ok", f"{figure.label} [bounds]", f"vs {labels[0]}",
         "p95 ms", "evidence"],
        rows,
        numeric={3, 4, 5, 6},
    )  # fmt: skip
    note = Paragraph(
        f"{figure.label} is the Hodges-Lehmann centre of each group's ok runs with "
        f"{(1 - misrate) * 100:g}% bounds. {verdict_rules(threshold)} Evidence: what the runs "
        "show (requested checkpoints, autovacuum, plan scans, the top wait), per run; 'What "
        "changed' below "
        "has the detail.",
        "note",
    )
    doc.sections.append(Section("Results", [table, note, *comparison_notes(comparisons)]))
    diff = _settings_diff(groups, labels)
    if diff is not None:
        blocks: list[Any] = [diff] + ([Paragraph(diff.note, "note")] if diff.note else [])
        doc.sections.append(Section("Settings that differ", blocks))
    figures = compare.compare_table(
        view, [chr(ord("A") + i) for i in range(len(groups))], joined=True
    )
    figures.caption = None
    legend = ", ".join(f"{chr(ord('A') + i)} = {label}" for i, label in enumerate(labels))
    intro = f"{legend}. Every figure with its ratio to A and the engine's verdict, under the "
    intro += "set-up of each side."
    doc.sections.append(Section("Figures", [Paragraph(intro, "note"), figures]))
    hosts = compare.hosts_table(view, labels)  # views/compare_hosts.py: every host, per role
    if hosts is not None:
        doc.sections.append(Section("Hosts", text_table_blocks(replace(hosts, caption=None))))
    for ch, label in zip(view.changes, labels[1:], strict=True):
        doc.sections.append(
            what_changed_section(groups[0], ch.column.runs, f"{label} against {labels[0]}", ch)
        )
    overlays = run_charts.overlay_charts(
        [(f"{label} (run {g[0].id})", g[0].series) for g, label in zip(groups, labels, strict=True)]
    )
    if overlays:
        note = Paragraph("The first run of each group, per second; warm-up shaded.", "note")
        doc.sections.append(Section("Over time", [*_figures("overlay-", overlays), note]))
    return doc


def what_changed_section(
    base: list[RunRecord], cand: list[RunRecord], title: str, computed: Changes | None = None
) -> Section:
    """What changed between two groups (pgrig.insights.changes), as the same tables
    `pgrig runs compare` and the web compare page show (`computed`: the comparison view's
    Changes, when it has them)."""
    from pgrig.insights.changes import tables, what_changed

    blocks: list[Any] = [
        Paragraph(
            "Statements, plans, the server log, the wait profile and the host of B against A, "
            "from the runs' insights (per run where a group has repeats).",
            "note",
        )
    ]
    for t in computed.tables if computed is not None else tables(what_changed(base, cand)):
        blocks += text_table_blocks(t)
    return Section(f"What changed: {title}", blocks)


def _group_label(g: list[RunRecord]) -> str:
    ids = [str(r.id) for r in g]
    return ("run " if len(ids) == 1 else "runs ") + ",".join(ids)


def _settings_diff(groups: list[list[RunRecord]], labels: list[str]) -> Table | None:
    """The settings that differ (pgrig.views.settings: the rule `runs compare` and the compare
    page use)."""
    diff, same = settings_diff(groups)
    if not diff:
        return None
    rows = [[s.label, *s.values] for s in diff]
    note = f"{same} non-default settings are the same in every run." if same else None
    return Table.build(["setting (layer)", *labels], rows, note=note)
