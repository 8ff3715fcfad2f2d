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
from typing import Any

from pgrig.analysis.compare import METRICS, Comparison, compare_runs, group_value
from pgrig.archive.records import RunRecord
from pgrig.insights.summary import TextTable
from pgrig.reports import run_charts
from pgrig.reports.document import (
    Cell,
    CellValue,
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
from pgrig.units import setting_text


def _when(rec: RunRecord) -> str:
    if rec.started_at is None:
        return "-"
    text = rec.started_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    if rec.ended_at is not None:
        text += f" ({(rec.ended_at - rec.started_at).total_seconds():.0f} s)"
    return text


def summary_items(rec: RunRecord) -> list[tuple[str, str]]:
    items = [("status", rec.status + (f": {rec.error}" if rec.error else ""))]
    items.append(("started", _when(rec)))
    items.append(("environment", f"{rec.env_name} ({rec.target or '-'})"))
    server = rec.server_version or "?"
    if not server.lower().startswith(rec.engine.lower()):
        server = f"{rec.engine} {server}"
    items.append(("server", server))
    data = rec.scenario or "-"
    if rec.scale:
        data += f", {'warehouses' if rec.scenario == 'tpcc' else 'scale'} {rec.scale}"
    if rec.db_size_bytes:
        data += f", {rec.db_size_bytes / 2**20:,.0f} MiB"
    items.append(("data", f"{data} in database {rec.database or '-'}"))
    load = f"{display_value(rec.workload)}, {rec.clients} clients, {rec.threads} threads"
    if rec.duration_s:
        load += f", {rec.duration_s:g}s measured"
    if rec.transactions_per_client:
        load += f", {rec.transactions_per_client} transactions per client"
    load += f", {rec.warmup_s:g}s warm-up" if rec.warmup_s else ", no warm-up"
    if rec.rate:
        load += f", rate {rec.rate:g}"
    if rec.via != "direct":
        load += f", via {rec.via}"
    items.append(("load", load))
    if rec.command:
        items.append(("command", rec.command))
    res = f"{fmt(rec.tps)} TPS over {fmt(rec.measured_s)} s, {rec.transactions or 0:,} transactions"
    res += f", {rec.failed or 0} failed"
    if rec.retried:
        res += f", {rec.retried} retried"
    if rec.skipped:
        res += f", {rec.skipped} skipped"
    if rec.nopm is not None:
        res += f"; NOPM {fmt(rec.nopm, 0)}, TPM {fmt(rec.tpm, 0)}"
    items.append(("result", res))
    lat = rec.latency.as_dict()
    if any(v is not None for v in lat.values()):
        items.append(("latency ms", ", ".join(f"{k} {fmt(v, 3)}" for k, v in lat.items())))
    cpu = [rec.cpu_user, rec.cpu_system, rec.cpu_iowait, rec.cpu_idle]
    if any(v is not None for v in cpu):
        items.append(("CPU us/sy/wa/id %", "/".join(fmt(v, 1) for v in cpu)))
    if rec.hit_ratio is not None:
        items.append(("buffer hit ratio", f"{rec.hit_ratio:.2f}%"))
    if rec.note:
        items.append(("note", rec.note))
    if rec.tags:
        items.append(("tags", ", ".join(f"{k}={v}" for k, v in rec.tags.items())))
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
        generated_by=f"pgrig report run {rec.id}",
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
    if rec.scripts:
        rows = [
            [
                s.name,
                str(s.weight),
                f"{s.transactions:,}",
                fmt(s.tps),
                str(s.failed),
                *(fmt(getattr(s.latency, q), 3) for q in ("avg", "p50", "p95", "p99", "max")),
            ]
            for s in rec.scripts
        ]
        doc.sections.append(
            Section(
                "Per transaction type",
                [
                    Table.build(
                        [
                            "script",
                            "weight",
                            "transactions",
                            "TPS",
                            "failed",
                            "avg ms",
                            "p50 ms",
                            "p95 ms",
                            "p99 ms",
                            "max ms",
                        ],
                        rows,
                        numeric=set(range(1, 10)),
                    )
                ],
            )
        )
    doc.sections += _metric_sections(rec)
    doc.sections.append(_settings_section(rec))
    doc.sections.append(why_section(rec))
    if rec.host:
        facts = [(k, _short(v)) for k, v in rec.host.items() if k != "checks"]
        doc.sections.append(Section("Host", [KeyValues(facts)]))
    doc.sections.append(host_checks_section(rec))
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


def text_table_blocks(t: TextTable) -> list[Any]:
    """An insights table as report blocks: the table captioned with its title and its note,
    or only "title: note" when it has no rows."""
    if not t.rows:
        return [Paragraph(f"{t.title}: {t.note}", "note")] if t.note else []
    blocks: list[Any] = [Table.build(t.columns, t.rows, caption=t.title, numeric=t.numeric)]
    if t.note:
        blocks.append(Paragraph(t.note, "note"))
    return blocks


def host_checks_section(rec: RunRecord) -> Section:
    """The host checks recorded at the start of the run (host.checks)."""
    checks = [c for c in rec.host.get("checks") or [] if isinstance(c, dict)]
    if not checks:
        text = "No host checks recorded with this run (runs before host checks existed)."
        return Section("Host checks", [Paragraph(text, "note")])
    rows: list[list[CellValue]] = [
        [
            str(c.get("name")),
            Cell.of(_opt(c.get("value"))),
            Cell.of(_opt(c.get("recommended"))),
            Cell([str(c.get("status"))], _CHECK_STYLES.get(str(c.get("status")), "muted")),
            str(c.get("why") or ""),
        ]
        for c in checks
    ]
    table = Table.build(["check", "value", "recommended", "status", "why"], rows)
    return Section("Host checks", [table])


_CHECK_STYLES = {"ok": "good", "warn": "warn"}


def _opt(v: Any) -> str | None:
    return None if v is None else str(v)


def _short(v: Any, width: int = 200) -> str:
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
    nd = rec.non_default_settings()
    if nd:
        rows = [
            [name, setting_text(s, name), setting_text(s, name, key="boot_val"),
             str(s.get("source") or "")]
            for name, s in sorted(nd.items())
        ]  # fmt: skip
        blocks.append(
            Table.build(
                ["setting", "value", "default", "source"],
                rows,
                caption="Effective settings that differ from PostgreSQL's defaults",
            )
        )
    if not blocks:
        blocks.append(Paragraph("No settings snapshot was recorded.", "note"))
    return Section("Settings", blocks)


# --- comparison of groups ------------------------------------------------------------------------
def compare_document(
    groups: list[list[RunRecord]], threshold: float = 0.02, misrate: float = 0.05
) -> Document:
    """Each group is repeats of one configuration; group 1 is the baseline."""
    labels = [_group_label(g) for g in groups]
    doc = Document(
        title="Comparison: " + " vs ".join(labels),
        generated_by="pgrig report compare",
    )
    rows: list[list[Any]] = []
    comparisons: list[Comparison | None] = []
    for i, (g, label) in enumerate(zip(groups, labels, strict=True)):
        first = g[0]
        vals = [r.tps for r in g if r.status == "ok" and r.tps]
        if i == 0:
            verdict = Cell(["baseline"], "muted")
        else:
            c = compare_runs(groups[0], g, "tps", threshold, misrate)
            comparisons.append(c)
            verdict = delta_cell(c)
        rows.append(
            [
                label,
                f"{first.env_name} ({short_version(first.server_version) or '?'})",
                f"{display_value(first.workload)}, {first.clients} clients",
                f"{len(vals)}/{len(g)}",
                Cell(fmt_interval(interval(vals, misrate))),
                verdict,
                fmt(group_value(g, METRICS["latency.p95"].value), 2),
            ]
        )
    table = Table.build(
        ["runs", "environment", "load", "ok", "TPS [bounds]", f"vs {labels[0]}", "p95 ms"],
        rows,
        numeric={3, 4, 5, 6},
    )
    note = Paragraph(
        f"TPS is the Hodges-Lehmann centre of each group's ok runs with {(1 - misrate) * 100:g}% "
        f"bounds. {verdict_rules(threshold)}",
        "note",
    )
    doc.sections.append(Section("Results", [table, note, *comparison_notes(comparisons)]))
    diff = _settings_diff([g[0] for g in groups], labels)
    if diff is not None:
        doc.sections.append(Section("Settings that differ", [diff]))
    for g, label in zip(groups[1:], labels[1:], strict=True):
        doc.sections.append(what_changed_section(groups[0], g, f"{label} against {labels[0]}"))
    overlays = run_charts.overlay_charts(
        [(f"{label} (run {g[0].id})", g[0].series) for g, label in zip(groups, labels, strict=True)]
    )
    if overlays:
        note = Paragraph("The first run of each group, per second; warm-up shaded.", "note")
        doc.sections.append(Section("Over time", [*_figures("overlay-", overlays), note]))
    return doc


def what_changed_section(base: list[RunRecord], cand: list[RunRecord], title: str) -> Section:
    """What changed between two groups (pgrig.insights.changes), as the same tables
    `pgrig runs compare` and the web compare page show."""
    from pgrig.insights.changes import tables, what_changed

    blocks: list[Any] = [
        Paragraph(
            "Statements, plans, the server log, the wait profile and the host of B against A, "
            "from the runs' insights (per run where a group has repeats).",
            "note",
        )
    ]
    for t in tables(what_changed(base, cand)):
        blocks += text_table_blocks(t)
    return Section(f"What changed: {title}", blocks)


def _group_label(g: list[RunRecord]) -> str:
    ids = [str(r.id) for r in g]
    return ("run " if len(ids) == 1 else "runs ") + ",".join(ids)


def _settings_diff(runs: list[RunRecord], labels: list[str]) -> Table | None:
    names = sorted({n for r in runs for n in r.settings})
    rows = []
    for n in names:
        vals = [setting_text(r.settings.get(n), n) for r in runs]
        if len(set(vals)) > 1:
            rows.append([n, *vals])
    if not rows:
        return None
    return Table.build(["setting", *labels], rows)
