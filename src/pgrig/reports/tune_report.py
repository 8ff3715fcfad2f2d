"""The tuning study report: best configuration, confirmation verdicts, knob importances, trials.

Everything comes from the archive: the study's extra (space, trials, best, importances, saved
by tune/runner.py after every trial) and its runs. The verdicts are the comparison engine's
(tune/confirm.py calls analysis/compare.py) on the confirmation repeats, computed here from the
archived runs, so the report, the CLI and the web give the same answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pgrig import format, units
from pgrig.analysis.compare import METRICS
from pgrig.archive.records import RunRecord, StudyRecord
from pgrig.format import pgrig_command
from pgrig.record.documents import StudyExtra
from pgrig.reports.document import Cell, Document, Figure, KeyValues, Paragraph, Section, Table
from pgrig.reports.study_common import verdict_rules
from pgrig.reports.summary import fmt, verdict_style
from pgrig.reports.svg import INK, PALETTE, Chart, Reference, Trace
from pgrig.tune import confirm
from pgrig.tune import objective as tune_objective
from pgrig.tune.importance import METHOD
from pgrig.tune.objective import Objective
from pgrig.views import evidence, tune_queries
from pgrig.views import tune_attribution as attribution


def build(
    record: StudyRecord,
    runs: list[RunRecord],
    baseline: RunRecord | None,
    confirmation: Sequence[RunRecord] = (),
) -> Document:
    """`runs`: the study's runs (light records); `baseline`: the baseline run, whole (its
    settings snapshot gives the environment's own value of every knob); `confirmation`: the
    confirmation runs, whole (their server series are the evidence)."""
    x = record.extra
    obj = tune_objective.of_study(x, runs)
    doc = Document(
        f"Tuning study {record.name}",
        f"{record.status}; objective {obj.label} ({obj.direction}); "
        f"{_done(x)} of {x.get('trials_planned', '?')} trials",
    )
    found = attribution.build(x, runs, obj.metric.key, confirmation, record.status)
    doc.sections.append(_answer(x, found, obj.label))
    doc.sections.append(_setup(record, runs))
    doc.sections.append(_best(record.name, x, baseline, obj.label))
    doc.sections.append(_verdicts(x, runs, obj.metric.key, confirmation))
    if confirmation:
        doc.sections.append(_evidence(confirmation, confirm.reference_of(x), obj))
        if tune_queries.is_tpch_study(runs):
            doc.sections.append(_queries(confirmation, confirm.reference_of(x)))
    doc.sections.append(_ablation(found))
    doc.sections.append(_importances(x))
    doc.sections.append(_trials(x, runs, obj))
    return doc


def _done(x: StudyExtra) -> int:
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


def _best(name: str, x: StudyExtra, baseline: RunRecord | None, label: str) -> Section:
    best = x.get("best")
    if not best:
        return Section("Best configuration", [Paragraph("no trial completed", "warn")])
    pgtune = x.get("pgtune_settings") or {}
    rows = []
    for knob, value in best["settings"].items():
        own = format.setting(baseline.settings.get(knob), knob) if baseline else None
        theirs = pgtune.get(knob)
        rows.append([knob, _human(value), own or "-", _human(theirs) if theirs else "-"])
    intro = Paragraph(
        f"Trial {best['trial'] + 1} (run {best.get('run_id')}): {fmt(best.get('value'), 2)} "
        f"{label}. Its own figure is the best of many noisy runs, so biased upwards: the "
        "confirmation below measures it again. "
        f"{pgrig_command('profile', 'save', 'NAME', '--from-study', name)} keeps it as a profile."
    )
    table = Table.build(["knob", "best", "environment's own", confirm.reference_of(x)], rows)
    return Section("Best configuration", [intro, table])


def _verdicts(
    x: StudyExtra, runs: list[RunRecord], metric: str, whole: Sequence[RunRecord] = ()
) -> Section:
    """The verdicts, each with both sides' evidence (from `whole`: the confirmation runs with
    their insights, when given)."""
    threshold = float(x.get("threshold") or 0.02)
    metrics = [metric] + (["tps"] if metric != "tps" else [])
    reference = confirm.reference_of(x)
    groups = confirm.groups(runs, reference)
    evidence_groups = confirm.groups(whole, reference) if whole else groups
    sides = {q: (base, cand) for q, base, cand in confirm.questions(reference)}
    rows: list[list[Any]] = []
    misrate = confirm.misrate_of(x)
    for m in metrics:
        for v in confirm.verdicts(runs, m, threshold, misrate, reference):
            c = v.comparison
            ev = _verdict_evidence(evidence_groups, *sides[v.question])
            if c is None:
                rows.append([v.question, METRICS[m].label, "-",
                             Cell.of(f"no verdict: {v.reason}"), "-", ev])  # fmt: skip
                continue
            verdict = Cell([c.verdict_text()], verdict_style(c.verdict))
            rows.append([v.question, c.label, c.ratio_text(), verdict, c.basis(), ev])
    counts = ", ".join(f"{k}: {len(g)} ok runs" for k, g in groups.items())
    looks = x.get("confirm_looks") or []
    stopped = x.get("confirm_stopped_at")
    sequential = (
        "Sequential: verdicts looked at after "
        + ", ".join(f"{lk['rounds']} rounds (misrate {lk['misrate']:g})" for lk in looks)
        + "; the misrates of the looks sum to the study's, so the chance of any wrong firm "
        "verdict over all looks stays within it (Bonferroni). "
        + (f"Stopped after {stopped} rounds; " if stopped is not None else "")
        + f"verdicts at misrate {misrate:g}."
        if len(looks) > 1
        else ""
    )
    return Section(
        "Confirmation",
        [
            Paragraph(f"Interleaved repeats ({counts}); the best configuration is the candidate."),
            *([Paragraph(sequential, "note")] if sequential else []),
            Table.build(
                ["question", "metric", "ratio [bounds]", "verdict", "basis", "evidence"], rows
            ),
            Paragraph(verdict_rules(threshold), "note"),
            Paragraph(
                "Evidence: what each side's confirmation runs show, per run (requested "
                "checkpoints, autovacuum, plan scans, the top wait; views/evidence.py).",
                "note",
            ),
        ],
    )


def _verdict_evidence(groups: dict[str, list[RunRecord]], base: str, cand: str) -> Cell:
    """Both sides' evidence, the candidate's first (a host that differed is flagged)."""
    lines, warn = evidence.against(groups.get(cand, []), groups.get(base, []), base)
    out = [f"{cand}: {'; '.join(lines) or '-'}", f"{base}: {evidence.text(groups.get(base, []))}"]
    return Cell(out, "warn" if warn else None)


def _human(value: object) -> str:
    """A setting value as written in a configuration ("6171024kB", "374MB") for people, as
    format.setting shows a server's: memory in binary units ("5.9 GiB"), the rest unchanged."""
    text = str(value)
    n = units.memory_bytes(text) if text[:1].isdigit() else None
    return format.exact_size(n) if n else text


# Below this mean share of idle CPU the load was bound by the machine's CPUs, not by I/O or WAL.
CPU_BOUND_IDLE_PCT = 5.0


def _queries(confirmation: Sequence[RunRecord], reference: str) -> Section:
    """TPC-H: per query and configuration, where the time went (views/tune_queries.py)."""
    groups = confirm.groups(confirmation, reference)
    head, cells = tune_queries.table(tune_queries.query_rows(groups), list(groups))
    intro = Paragraph(
        "Per query, the median over each configuration's confirmation runs: its time, the "
        "best configuration's speed-up (the other's time / the best's), the temp files it "
        "wrote, its JIT compilation time (pg_stat_statements) and whether its sampled plans "
        "differ from the baseline's (not sampled: no plan of it was caught in a run)."
    )
    return Section("Per query", [intro, Table.build(head, cells)])


def _evidence(confirmation: Sequence[RunRecord], reference: str, obj: Objective) -> Section:
    """Why the configurations differ, or do not: per configuration the means over its ok
    confirmation runs of what the server did in the measured window (WAL, checkpoints, buffer
    hits) and how busy the machine was, from each run's own series; then the figures beside
    the objective (CH-benCHmark's analytic queries per hour), medians per configuration."""
    rows: list[list[Any]] = []
    idle_all: list[float] = []
    for config, group in confirm.groups(confirmation, reference).items():
        if not group:
            continue
        tps = _mean([r.tps for r in group])
        wal = _mean([_window_mean(r, "wal_bytes") for r in group])
        per_tx = wal / tps if tps and not math.isnan(wal) else math.nan
        ckpt = _mean([_window_sum(r, "checkpoints_timed") + _window_sum(r, "checkpoints_req")
                      for r in group])  # fmt: skip
        idle = _mean([r.cpu_idle for r in group])
        idle_all += [r.cpu_idle for r in group if r.cpu_idle is not None]
        hits = _mean([_window_mean(r, "hit_ratio") for r in group])
        iowait = _mean([r.cpu_iowait for r in group])
        rows.append([
            config, len(group), fmt(tps, 0), _size(wal, "/s"), _size(per_tx), fmt(ckpt, 1),
            fmt(hits, 1), fmt(idle, 1), fmt(iowait, 1),
        ])  # fmt: skip
    headers = ["configuration", "runs", "TPS", "WAL", "WAL per transaction", "checkpoints",
               "buffer hit %", "CPU idle %", "iowait %"]  # fmt: skip
    blocks: list[Any] = [
        Paragraph(
            "Means over each configuration's ok confirmation runs, in the measured window: WAL "
            "written (pg_stat_wal), checkpoints started (timed + requested), the buffer hit "
            "ratio, and the machine's idle and iowait CPU."
        ),
        Table.build(headers, rows, numeric=set(range(1, len(headers)))),
    ]
    if idle_all and _mean(idle_all) < CPU_BOUND_IDLE_PCT:
        blocks.append(
            Paragraph(
                f"CPU idle averaged {_mean(idle_all):.1f}% over the confirmation runs (at most "
                f"{max(idle_all):.1f}%): the load was bound by this machine's CPUs, which "
                "pgbench and the server share. Durable knobs cannot buy throughput there; what "
                "they change (WAL volume, checkpoints, cache hits) shows above.",
                "warn",
            )
        )
    beside = tune_objective.beside_rows(obj, confirm.groups(confirmation, reference))
    if beside:
        blocks.append(
            Paragraph(tune_objective.beside_intro(obj) + ". Medians over the ok confirmation runs.")
        )
        configs = list(beside[0].medians)
        blocks.append(
            Table.build(
                ["figure", *configs],
                [[r.figure.label, *(fmt(r.medians[c], 0) for c in configs)] for r in beside],
                numeric=set(range(1, len(configs) + 1)),
            )
        )
    return Section("Evidence", blocks)


def _size(v: float, suffix: str = "") -> str:
    return "-" if math.isnan(v) else format.size(v) + suffix


def _mean(values: Sequence[float | None]) -> float:
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


def _window(rec: RunRecord, column: str) -> list[float]:
    cols = rec.series.get("pg") or {}
    t, y = cols.get("t") or [], cols.get(column) or []
    end = rec.measured_s if rec.measured_s is not None else rec.duration_s
    return [
        float(v)
        for ti, v in zip(t, y, strict=False)
        if ti is not None and v is not None and ti >= 0 and (end is None or ti < end)
    ]


def _window_mean(rec: RunRecord, column: str) -> float:
    return _mean(list(_window(rec, column)))


def _window_sum(rec: RunRecord, column: str) -> float:
    return float(sum(_window(rec, column)))


def _answer(x: StudyExtra, a: attribution.Attribution, label: str) -> Section:
    """Seed 000's question in its own terms: what was reached, each setting to what and why,
    and what durable settings alone keep."""
    blocks: list[Any] = []
    if a.unfinished is not None:  # first: everything below rests on what it ran
        blocks.append(Paragraph(f"This tuning study was {a.unfinished}.", "warn"))
    if not a.confirmation_ended:
        blocks.append(
            Paragraph(
                "The best trial was not confirmed: its figure is the best of noisy single "
                "runs; do not apply it before the confirmation ends (the same `pgrig tune` "
                "command with --resume).",
                "warn",
            )
        )
    base = next((v for v in a.verdicts if v.question == confirm.VS_BASELINE), None)
    c = base.comparison if base is not None else None
    if c is None or c.ratio is None:
        blocks.append(Paragraph("No verdict against the baseline: nothing to attribute.", "warn"))
    else:
        groups = a.evidence
        reached = next((r.tps for r in groups if r.config == confirm.BEST), math.nan)
        start = next((r.tps for r in groups if r.config == confirm.BASELINE), math.nan)
        figures = (
            f" (confirmation means: {fmt(reached, 0)} against {fmt(start, 0)} TPS)"
            if not math.isnan(reached) and not math.isnan(start)
            else ""
        )
        blocks.append(
            Paragraph(
                f"Reached: the best configuration is {c.ratio_text()} the baseline's {label}, "
                f"{c.verdict_text()}{figures}; {c.basis()}."
            )
        )
    keeps = a.durable_keeps()
    if keeps is not None:
        blocks.append(
            Paragraph(
                "With durable settings only (fsync, synchronous_commit and full_page_writes "
                f"back on), the configuration keeps x{keeps[0]:.3f} over the baseline "
                f"[{keeps[1]:.3f}, {keeps[2]:.3f}: the gain's point estimate over the bounds of "
                "the ablation's durable-only comparison]."
            )
        )
    rows = [[r.setting, _human(r.value), r.why] for r in a.reasons]
    if rows:
        blocks.append(Table.build(["setting", "set to", "why"], rows, "Each setting, and why"))
    blocks.append(
        Paragraph(
            "A measured share comes from the ablation (below): the best configuration against "
            "itself with that setting (or group) put back to the environment's own value, "
            "interleaved. A search importance only says which knobs the search varied among "
            "its best trials.",
            "note",
        )
    )
    return Section("Answer", blocks)


def _ablation(a: attribution.Attribution) -> Section:
    if not a.shares:
        return Section(
            "Ablation",
            [Paragraph(a.ablation_skipped or "not run", "note")],
        )
    rows: list[list[Any]] = []
    for sh in a.shares:
        c = sh.comparison
        verdict = Cell([c.verdict_text()], verdict_style(c.verdict)) if c else Cell.of("-")
        rows.append([sh.unit.label, sh.effect_text, verdict, sh.share_text,
                     c.basis() if c else (sh.reason or "")])  # fmt: skip
    if a.durable is not None and a.durable.unit.key == "durable-only":
        c = a.durable.comparison
        verdict = Cell([c.verdict_text()], verdict_style(c.verdict)) if c else Cell.of("-")
        rows.append(["durability settings together (durable only)", a.durable.effect_text,
                     verdict, a.durable.share_text, c.basis() if c else ""])  # fmt: skip
    total = a.shares_sum
    blocks: list[Any] = [
        Paragraph(
            f"{a.ablation_repeats} interleaved rounds of the best configuration and the best "
            "with each unit put back to the environment's own value. Ratio: best / without "
            "the unit (above 1: the unit helps). Share: log(that ratio) / log(best / "
            "baseline) from the confirmation, bounds from the unit's ratio alone. "
            + attribution.holm_text(a)
        ),
        Table.build(
            ["put back", "best / without it", "verdict", "share of the gain", "basis"], rows
        ),
    ]
    if total is not None:
        blocks.append(
            Paragraph(
                f"Shares sum to {total * 100:.0f}%: settings that act only together (or against "
                "each other) make the sum differ from 100%. A group with an effect is not split "
                "further.",
                "note",
            )
        )
    if a.gain is None:
        blocks.append(
            Paragraph("The confirmation found no gain over the baseline: no shares.", "note")
        )
    ev: list[list[Any]] = [
        [r.config, str(r.runs), fmt(r.tps, 0), _size(r.wal_per_tx), _pct(r.wal_write_pct),
         _pct(r.wal_sync_pct), fmt(r.checkpoints_timed, 1), fmt(r.checkpoints_req, 1),
         fmt(r.hit_ratio, 1), fmt(r.cpu_idle, 1)]
        for r in a.evidence
    ]  # fmt: skip
    if ev:
        blocks.append(
            Table.build(
                [
                    "configuration",
                    "runs",
                    "TPS",
                    "WAL per transaction",
                    "WALWrite waits %",
                    "WalSync waits %",
                    "checkpoints timed",
                    "checkpoints requested",
                    "buffer hit %",
                    "CPU idle %",
                ],
                ev,
                "Evidence per configuration (means over its ok runs, measured window)",
                numeric=set(range(1, 10)),
            )
        )
    return Section("Ablation", blocks)


def _pct(v: float | None) -> str:
    return "-" if v is None or math.isnan(v) else f"{v:.1f}"


def _importances(x: StudyExtra) -> Section:
    imp = x.get("importances") or {}
    if not imp:
        why = x.get("importances_note") or "not computed"
        return Section("Knob importances (search)", [Paragraph(f"none: {why}", "note")])
    rows = [[k, f"{v * 100:.1f}%"] for k, v in sorted(imp.items(), key=lambda kv: -kv[1])]
    note = Paragraph(
        f"Search importances, not effects: {METHOD} over the completed trials, how much each "
        "knob's values among the best trials differ from its values over all of them, as "
        "shares summing to 100%. Few trials make these rough; the ablation above measures "
        "effects.",
        "note",
    )
    return Section(
        "Knob importances (search)",
        [Table.build(["knob", "search importance"], rows, numeric={1}), note],
    )


def _trials(x: StudyExtra, runs: list[RunRecord], obj: Objective) -> Section:
    metric, label = obj.metric.key, obj.label
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
                *tune_objective.beside_cells(obj, t),
                fmt(rec.latency.p95, 2) if rec is not None else "-",
                str(t.get("run_id") or "-"),
                t.get("reason") or "",
            ]
        )
    chart = trials_chart(x, by_id, metric, label)
    if chart is not None:
        figures.append(Figure("trials", "", chart))
    beside = tune_objective.beside_headings(obj)
    n = len(beside)
    table = Table.build(
        ["trial", "state", label, *beside, "p95 ms", "run", "why pruned or failed"],
        rows,
        numeric={0, 2, *range(3, 3 + n), 3 + n, 4 + n},
    )
    return Section("Trials", [*figures, table])


def trials_chart(
    x: StudyExtra, by_id: dict[int | None, RunRecord], metric: str, label: str
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
