"""The tuning study report: best configuration, confirmation verdicts, knob importances, trials.

Everything comes from the archive: the study's extra (space, trials, best, importances, saved
by tune/runner.py after every trial) and its runs. The verdicts are the comparison engine's
(tune/confirm.py calls analysis/compare.py) on the confirmation repeats, computed here from the
archived runs, so the report, the CLI and the web give the same answer.
"""

from __future__ import annotations

from typing import Any

from pgrig.analysis.compare import METRICS
from pgrig.archive.records import RunRecord, StudyRecord
from pgrig.reports.document import Cell, Document, Figure, KeyValues, Paragraph, Section, Table
from pgrig.reports.study_common import verdict_rules
from pgrig.reports.summary import fmt, verdict_style
from pgrig.reports.svg import INK, PALETTE, Chart, Reference, Trace
from pgrig.tune import confirm
from pgrig.tune.importance import METHOD
from pgrig.tune.objective import objective as objective_of
from pgrig.units import setting_text


def build(record: StudyRecord, runs: list[RunRecord], baseline: RunRecord | None) -> Document:
    """`runs`: the study's runs (light records); `baseline`: the baseline run, whole (its
    settings snapshot gives the environment's own value of every knob)."""
    x = record.extra
    obj = objective_of(x.get("objective", "tps"), _workload(runs))
    doc = Document(
        f"Tuning study {record.name}",
        f"{record.status}; objective {obj.label} ({obj.direction}); "
        f"{_done(x)} of {x.get('trials_planned', '?')} trials",
    )
    doc.sections.append(_setup(record, runs))
    doc.sections.append(_best(record.name, x, baseline, obj.label))
    doc.sections.append(_verdicts(x, runs, obj.metric.key))
    doc.sections.append(_importances(x))
    doc.sections.append(_trials(x, runs, obj.metric.key, obj.label))
    return doc


def _workload(runs: list[RunRecord]) -> str:
    return runs[0].workload if runs else ""


def _done(x: dict[str, Any]) -> int:
    return sum(1 for t in x.get("trials") or [] if t.get("state") in ("complete", "pruned"))


def _setup(record: StudyRecord, runs: list[RunRecord]) -> Section:
    x = record.extra
    first = runs[0] if runs else None
    items = [("study", record.name), ("status", record.status)]
    if first is not None:
        items += [
            ("environment", f"{first.env_name} (PostgreSQL {first.server_major})"),
            ("workload", f"{first.workload}, {first.clients} clients, {first.threads} threads"),
            (
                "each run",
                f"{fmt(first.duration_s, 0)} s measured, {fmt(first.warmup_s, 0)} s warm-up",
            ),
        ]
    items.append(("confirmation", f"{x.get('confirm_repeats', '?')} interleaved repeats"))
    blocks: list[Any] = [KeyValues(items)]
    for note in x.get("notes") or []:
        blocks.append(Paragraph(note, "warn" if note.startswith("UNSAFE") else "note"))
    rows = [
        [k["name"], k.get("group", ""), k["range"], "restart" if k.get("restart") else "reload"]
        for k in x.get("space") or []
    ]
    blocks.append(Table.build(["knob", "group", "range", "applies by"], rows, "The knob space"))
    return Section("Setup", blocks)


def _best(name: str, x: dict[str, Any], baseline: RunRecord | None, label: str) -> Section:
    best = x.get("best")
    if not best:
        return Section("Best configuration", [Paragraph("no trial completed", "warn")])
    pgtune = x.get("pgtune_settings") or {}
    rows = []
    for name, value in best["settings"].items():
        own = setting_text(baseline.settings.get(name), name) if baseline else None
        rows.append([name, value, own or "-", pgtune.get(name, "-")])
    intro = Paragraph(
        f"Trial {best['trial'] + 1} (run {best.get('run_id')}): {fmt(best.get('value'), 2)} "
        f"{label}. Its own figure is the best of many noisy runs, so biased upwards: the "
        "confirmation below measures it again. pgrig profile save NAME --from-study "
        f"{name} keeps it as a profile."
    )
    table = Table.build(["knob", "best", "environment's own", "pgtune-oltp"], rows)
    return Section("Best configuration", [intro, table])


def _verdicts(x: dict[str, Any], runs: list[RunRecord], metric: str) -> Section:
    threshold = float(x.get("threshold") or 0.02)
    metrics = [metric] + (["tps"] if metric != "tps" else [])
    groups = confirm.groups(runs)
    rows: list[list[Any]] = []
    for m in metrics:
        for v in confirm.verdicts(runs, m, threshold):
            c = v.comparison
            if c is None:
                rows.append([v.question, METRICS[m].label, "-", Cell.of(f"no verdict: {v.reason}")])
                continue
            verdict = Cell([c.verdict_text()], verdict_style(c.verdict))
            rows.append([v.question, c.label, c.ratio_text(), verdict, c.basis()])
    counts = ", ".join(f"{k}: {len(g)} ok runs" for k, g in groups.items())
    return Section(
        "Confirmation",
        [
            Paragraph(f"Interleaved repeats ({counts}); the best configuration is the candidate."),
            Table.build(["question", "metric", "ratio [bounds]", "verdict", "basis"], rows),
            Paragraph(verdict_rules(threshold), "note"),
        ],
    )


def _importances(x: dict[str, Any]) -> Section:
    imp = x.get("importances") or {}
    if not imp:
        why = x.get("importances_note") or "not computed"
        return Section("Knob importances", [Paragraph(f"none: {why}", "note")])
    rows = [[k, f"{v * 100:.1f}%"] for k, v in sorted(imp.items(), key=lambda kv: -kv[1])]
    note = Paragraph(
        f"{METHOD} over the completed trials: how much each knob's values among the best "
        "trials differ from its values over all of them, as shares summing to 100%. Few trials "
        "make these rough.",
        "note",
    )
    return Section(
        "Knob importances", [Table.build(["knob", "importance"], rows, numeric={1}), note]
    )


def _trials(x: dict[str, Any], runs: list[RunRecord], metric: str, label: str) -> Section:
    by_id = {r.id: r for r in runs}
    value = METRICS[metric].value
    rows, figures = [], []
    for t in x.get("trials") or []:
        rec = by_id.get(t.get("run_id"))
        rows.append(
            [
                str(t["number"] + 1),
                t["state"],
                fmt(value(rec), 2) if rec is not None and rec.status == "ok" else "-",
                fmt(rec.latency.p95, 2) if rec is not None else "-",
                str(t.get("run_id") or "-"),
                t.get("reason") or "",
            ]
        )
    chart = trials_chart(x, by_id, metric, label)
    if chart is not None:
        figures.append(Figure("trials", "", chart))
    table = Table.build(
        ["trial", "state", label, "p95 ms", "run", "why pruned"], rows, numeric={0, 2, 3, 4}
    )
    return Section("Trials", [*figures, table])


def trials_chart(
    x: dict[str, Any], by_id: dict[int | None, RunRecord], metric: str, label: str
) -> Chart | None:
    """The objective per trial: completed and pruned trials, the best so far, the baseline."""
    m = METRICS[metric]
    done_x: list[float | None] = []
    done_y: list[float | None] = []
    pruned_x: list[float | None] = []
    pruned_y: list[float | None] = []
    best_x: list[float | None] = []
    best_y: list[float | None] = []
    best: float | None = None
    for t in x.get("trials") or []:
        rec = by_id.get(t.get("run_id"))
        v = m.value(rec) if rec is not None and rec.status == "ok" else None
        if v is None:
            continue
        n = float(t["number"] + 1)
        if t["state"] == "complete":
            done_x.append(n)
            done_y.append(v)
            better = best is None or (v > best if m.higher_is_better else v < best)
            best = v if better else best
            best_x.append(n)
            best_y.append(best)
        else:
            pruned_x.append(n)
            pruned_y.append(v)
    if not done_x and not pruned_x:
        return None
    refs = []
    base = by_id.get(x.get("baseline_run"))
    base_value = m.value(base) if base is not None else None
    if base_value is not None:
        refs.append(Reference(float(base_value), "baseline (environment's own)"))
    traces = [
        Trace("completed trial", done_x, done_y, kind="points", color=INK),
        Trace("pruned trial", pruned_x, pruned_y, kind="points", color=PALETTE[2]),
        Trace("best so far", best_x, best_y, color=PALETTE[0], dash="dashed"),
    ]
    return Chart(
        f"{m.label} per trial",
        [t for t in traces if t.x],
        x_label="trial",
        y_label=label,
        y_unit={"tps": "1/s", "latency.p95": "ms"}.get(metric, ""),
        references=refs,
        y_from_zero=True,
        height=280,
    )
