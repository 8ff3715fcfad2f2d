"""The comparison of runs, or groups of repeats, computed once: `pgrig runs compare`, the web
compare page and `pgrig report compare` render this (the first column is the baseline).

Ratios, bounds and verdicts come from the comparison engine (analysis/compare.py); the other
figures are plain ratios of the groups' values (group_value: the median of ok runs). To add a
figure, add it to record/figures.py; to add a line of context, add a ContextSpec: every
surface shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pgrig import format as fmt
from pgrig.analysis.compare import (
    DEFAULT_MISRATE,
    DEFAULT_THRESHOLD,
    METRICS,
    Comparison,
    compare_runs,
    format_ratio,
    group_value,
)
from pgrig.archive.records import RunRecord
from pgrig.insights.changes import WhatChanged, tables, what_changed
from pgrig.record.figures import BY_KEY, FIGURES, Figure, headline
from pgrig.record.host_docs import host_cpus
from pgrig.table import Cell, Table
from pgrig.views import chbench, compare_hosts, disk_limit, harness_cost, latency
from pgrig.views import evidence as evidence_of
from pgrig.views.compare_hosts import HostFigures
from pgrig.views.settings import SettingDiff, settings_diff

# The rows of a comparison: every figure of the registry (record/figures.py), its text by its
# unit (format.in_unit).
METRIC_SPECS: tuple[Figure, ...] = FIGURES


def _show(m: Figure, v: float | None) -> str:
    return fmt.in_unit(v, m.unit, m.digits)


@dataclass(frozen=True)
class ContextSpec:
    key: str
    label: str
    get: Callable[[RunRecord], Any]
    show: Callable[[Any], str] = fmt.text
    # a line said of the column as a whole (not "a / b" of its runs' values)
    of_group: Callable[[Sequence[RunRecord]], str] | None = None


def duration_of(rec: RunRecord) -> float | None:
    """Planned seconds (time-bound runs) or the measured window (transaction-bound runs)."""
    return rec.duration_s if rec.duration_s is not None else rec.measured_s


def _clients(r: RunRecord) -> str:
    """Clients / threads, and CH-benCHmark's analytic streams beside them (views/chbench.py)."""
    streams = chbench.analytic_clients(r)
    return f"{r.clients} / {r.threads}" + (f" + {streams} analytic" if streams is not None else "")


def _scale(r: RunRecord) -> int | float | str | None:
    """pgbench's scale and TPC-C's warehouses as the number; TPC-H's scale factor, which is
    not one of those, named ("SF 0.01")."""
    scale = r.data_scale()
    if scale is None or scale[0] != "SF":
        return scale[1] if scale else None
    return f"SF {scale[1]:g}"


def _options(r: RunRecord) -> str | None:
    """The workload's own options as the run gave them (-D, sysbench's --define)."""
    return " ".join(f"{k}={v}" for k, v in sorted((r.defines or {}).items())) or None


def _script_data(r: RunRecord) -> str | None:
    """sysbench data a script prepared: the script and the options it prepared it with (two
    runs of one script on data of another scale are not alike; `scale` says nothing there)."""
    dataset = r.extra.get("dataset") or {}
    if r.scenario != "sysbench" or not dataset.get("script"):
        return None
    defines = " ".join(f"{k}={v}" for k, v in sorted((dataset.get("defines") or {}).items()))
    name = str(dataset["script"]).rsplit("/", 1)[-1]
    return f"{name} {defines}".strip()


CONTEXT_SPECS: tuple[ContextSpec, ...] = (
    ContextSpec("status", "status", lambda r: r.status),
    ContextSpec("started_at", "started", lambda r: r.started_at, fmt.timestamp),
    ContextSpec("env_name", "environment", lambda r: r.env_name),
    ContextSpec(
        "server_version",
        "server",
        lambda r: r.server_version,
        lambda v: fmt.engine("postgresql", v) if v else fmt.MISSING,
    ),
    ContextSpec("hostname", "host", lambda r: (r.host or {}).get("hostname")),
    ContextSpec("cpus", "CPUs", lambda r: host_cpus(r.host)),
    ContextSpec("workload", "workload", lambda r: r.workload),
    ContextSpec("scale", "scale", _scale),
    ContextSpec("script_data", "data prepared by", _script_data),
    ContextSpec("defines", "workload options", _options),
    ContextSpec("db_size_bytes", "data volume", lambda r: r.db_size_bytes, fmt.size),
    ContextSpec("clients", "clients / threads", _clients),
    ContextSpec("duration_s", "duration", duration_of, fmt.duration),
    ContextSpec("warmup_s", "warm-up", lambda r: r.warmup_s, fmt.duration),
    ContextSpec("rate", "rate limit", lambda r: r.rate),
    ContextSpec("protocol", "protocol", lambda r: r.protocol),
    ContextSpec("via", "via", lambda r: r.via),
    ContextSpec("disk_limit", "disk limit", disk_limit.of),
    ContextSpec("study_point", "study point", lambda r: r.study_point),
    ContextSpec(
        "latency_basis",
        "percentiles rest on",
        lambda r: latency.of(r),
        of_group=latency.group_text,
    ),
    # what the runs show that explains the figures (views/evidence.py)
    ContextSpec("evidence", "evidence", lambda r: None, of_group=evidence_of.text),
)


@dataclass
class Delta:
    """One candidate column's figure against the baseline's."""

    text: str
    ratio_value: float | None = None
    ratio: str | None = None  # "x1.234 [1.011, 1.123]" (bounds only from the engine)
    verdict: str | None = None  # the engine's verdict text, or "no verdict: <reason>"
    verdict_key: str | None = None  # faster | slower | equivalent | inconclusive | None
    basis: str | None = None  # what the bounds were computed from
    detail: str | None = None  # the engine's one-line description
    style: str = ""  # the verdict's: good | bad | neutral | muted | "" (no verdict)
    trend: str = ""  # a plain ratio's direction without a verdict: better | worse | ""


@dataclass
class MetricRow:
    key: str
    label: str
    values: list[float | None]  # raw, per column (JSON)
    base: str
    others: list[Delta]


@dataclass
class ContextRow:
    key: str
    label: str
    values: list[str]  # shown, per column
    raw: list[Any]  # per column: the value its runs agree on, else the shown values "a / b"
    compared: bool = True  # False: a fact of each column that differs by nature (sample sizes)

    @property
    def differs(self) -> bool:
        return self.compared and len(set(self.values)) > 1


@dataclass
class Column:
    """One configuration: a run, or repeats of it."""

    runs: list[RunRecord]

    @property
    def ids(self) -> list[int]:
        return [r.id for r in self.runs if r.id is not None]

    @property
    def title(self) -> str:
        if len(self.runs) == 1:
            return f"run {self.runs[0].id}"
        return "runs " + ",".join(str(i) for i in self.ids)

    @property
    def note(self) -> str:
        first = self.runs[0]
        return first.note or first.study_point or first.workload


@dataclass
class Changes:
    """What changed from the baseline to one column (pgrig.insights.changes)."""

    column: Column
    document: WhatChanged
    tables: list[Table]  # every column (the web page, the reports, `runs compare --wide`)

    def narrow_tables(self) -> list[Table]:
        """The same tables, the statements' with their time columns only: what fits 120
        terminal columns (the terminal's default; insights.changes.tables(wide=False))."""
        return tables(self.document, wide=False)


@dataclass
class ComparisonView:
    columns: list[Column]
    metrics: list[MetricRow]
    context: list[ContextRow]
    settings: list[SettingDiff]
    same_settings: int  # non-default settings equal in every run
    comparisons: list[dict[str, Comparison]]  # per candidate column: the engine's, by metric
    changes: list[Changes] = field(default_factory=list)
    threshold: float = DEFAULT_THRESHOLD
    misrate: float = DEFAULT_MISRATE
    hosts: list[HostFigures] = field(default_factory=list)  # views/compare_hosts.py
    harness: harness_cost.HarnessComparison | None = None  # views/harness_cost.py

    @property
    def runs(self) -> list[RunRecord]:
        return [r for c in self.columns for r in c.runs]

    @property
    def verdict_figure(self) -> Figure:
        """The figure the comparison's verdict is on: TPS (TPC-C runs too), a TPC-H run's own
        (its headline, record/figures.py: Power@Size, Throughput@Size or QphH@Size)."""
        figure = headline(self.columns[0].runs[0])
        return figure if figure.key.startswith("tpch.") else BY_KEY["tps"]

    @property
    def verdict(self) -> Comparison | None:
        """The engine's comparison of the first candidate against the baseline on
        verdict_figure."""
        return self.comparisons[0].get(self.verdict_figure.key) if self.comparisons else None

    @property
    def paired_note(self) -> str | None:
        """PAIRED_NOTE when a candidate's comparison was judged paired."""
        return paired_note(c for comps in self.comparisons for c in comps.values())


# Said once under any comparison judged paired (the engine's method "pairs"), on every surface.
PAIRED_NOTE = (
    "paired: the runs are interleaved repeats of one study (matching repeat numbers, run in "
    "alternation), so each round's two runs are compared with each other (paired t on log "
    "ratios) and the host's drift between rounds does not count as noise"
)


def paired_note(comparisons: Iterable[Comparison | None]) -> str | None:
    """PAIRED_NOTE when any of the comparisons was judged paired."""
    return PAIRED_NOTE if any(c is not None and c.paired for c in comparisons) else None


def build(
    groups: Sequence[Sequence[RunRecord]],
    threshold: float = DEFAULT_THRESHOLD,
    misrate: float = DEFAULT_MISRATE,
    with_changes: bool = True,
) -> ComparisonView:
    columns = [Column(list(g)) for g in groups]
    base = columns[0].runs
    comparisons = [
        {k: compare_runs(base, c.runs, k, threshold, misrate) for k in METRICS} for c in columns[1:]
    ]
    rows: list[MetricRow] = []
    for m in METRIC_SPECS:
        values = [group_value(c.runs, m.value) for c in columns]
        if all(v is None for v in values):
            continue
        others = [
            _delta(m, values[0], v, comps.get(m.key))
            for v, comps in zip(values[1:], comparisons, strict=True)
        ]
        shown = _show(m, values[0])
        if m.key.startswith("latency.") and m.key[8:] in latency.SHOWN:
            shown = _with_bounds(shown, columns[0], m.key[8:])
            for d, col in zip(others, columns[1:], strict=True):
                d.text = _with_bounds(d.text, col, m.key[8:])
        rows.append(MetricRow(m.key, m.heading, values, shown, others))
    context = [_context_row(s, columns) for s in CONTEXT_SPECS]
    harness = harness_cost.compare([c.runs for c in columns])
    context.append(_harness_row(harness))
    settings, same = settings_diff([c.runs for c in columns])
    changes = []
    if with_changes:
        for c in columns[1:]:
            doc = what_changed(base, c.runs)
            changes.append(Changes(c, doc, tables(doc)))
    hosts = compare_hosts.build([c.runs for c in columns])
    return ComparisonView(
        columns, rows, context, settings, same, comparisons, changes, threshold, misrate, hosts,
        harness,
    )  # fmt: skip


def _harness_row(harness: harness_cost.HarnessComparison) -> ContextRow:
    """The harness cost of each column; marked as differing only beyond the threshold
    (views/harness_cost.py), the candidates' cells saying by how much."""
    texts = harness.texts
    return ContextRow("harness", "harness", texts, list(texts), compared=harness.differs)


def _with_bounds(text: str, col: Column, q: str) -> str:
    """A single run's percentile with its order-statistic bounds: "1.234 [1.200, 1.270]"
    (a group's figure is the median of its runs: the engine's ratio bounds speak for it)."""
    if len(col.runs) != 1 or text == fmt.MISSING:
        return text
    bounds = latency.bounds_text(latency.of(col.runs[0]), q)
    return f"{text} {bounds}" if bounds else text


def _delta(m: Figure, base_value: float | None, value: float | None, c: Comparison | None) -> Delta:
    d = Delta(_show(m, value))
    if c is None:
        if value is not None and base_value:
            d.ratio_value = value / base_value
            d.ratio = format_ratio(d.ratio_value)
            if m.lower_is_better is not None and abs(d.ratio_value - 1) >= 0.005:
                better = d.ratio_value < 1 if m.lower_is_better else d.ratio_value > 1
                d.trend = "better" if better else "worse"
        return d
    d.ratio_value = c.ratio
    d.ratio = c.ratio_text() if c.ratio is not None else None
    # a caveat (two groups of different workloads) is said before the verdict
    d.verdict = f"{c.caveat}: {c.verdict_text()}" if c.caveat else c.verdict_text()
    d.verdict_key = c.verdict
    d.basis, d.detail = c.basis() or None, c.describe()
    d.style = fmt.verdict_style(c.verdict)
    return d


def _context_row(spec: ContextSpec, columns: list[Column]) -> ContextRow:
    """One value per column when its runs agree, else every distinct value ("a / b")."""
    shown, raw = [], []
    if spec.of_group is not None:
        texts = [spec.of_group(col.runs) for col in columns]
        return ContextRow(spec.key, spec.label, texts, list(texts), compared=False)
    for col in columns:
        values = list(dict.fromkeys(spec.get(r) for r in col.runs))
        texts = [fmt.MISSING if v in (None, "") else spec.show(v) for v in values]
        shown.append(" / ".join(dict.fromkeys(texts)))
        raw.append(values[0] if len(values) == 1 else shown[-1])
    return ContextRow(spec.key, spec.label, shown, raw)


def to_json(view: ComparisonView) -> dict[str, object]:
    """The comparison as data (`runs compare --json`): columns A and B (and more), raw values."""
    names = [chr(ord("a") + i) if i < 26 else f"c{i}" for i in range(len(view.columns))]
    out: dict[str, object] = {
        n: {"runs": [{"id": r.id, "status": r.status} for r in c.runs]}
        for n, c in zip(names, view.columns, strict=True)
    }
    out["metrics"] = {
        m.key.replace("latency.", "latency_ms."): {
            **dict(zip(names, m.values, strict=True)),
            "ratio": m.others[0].ratio_value if m.others else None,
        }
        for m in view.metrics
    }
    out["context"] = {c.key: dict(zip(names, c.raw, strict=True)) for c in view.context}
    out["settings_diff"] = {s.name: dict(zip(names, s.raw, strict=True)) for s in view.settings}
    out["hosts"] = compare_hosts.to_json(view.hosts, names)
    if view.harness is not None:
        out["harness"] = view.harness.as_dict(names)
    verdict = view.verdict
    out["verdict"] = verdict.as_dict() if verdict is not None else None
    out["comparisons"] = (
        {k: c.as_dict() for k, c in view.comparisons[0].items()} if view.comparisons else {}
    )
    return out


# --- the comparison as tables (the terminal and the reports) -----------------------------------


def column_title(name: str, col: Column) -> str:
    runs = col.runs
    if len(runs) == 1:
        return f"{name}: run {runs[0].id} ({runs[0].status})"
    ok = sum(r.status == "ok" for r in runs)
    return f"{name}: runs {','.join(str(r.id) for r in runs)} ({ok}/{len(runs)} ok)"


def compare_table(view: ComparisonView, names: Sequence[str], joined: bool = False) -> Table:
    """Context (values that differ marked "warn"), then each figure with, per candidate, its
    ratio to the baseline and the engine's verdict (joined: both in one cell, the ratio over
    the verdict, as the reports show a verdict with its bounds)."""
    base = names[0]
    columns = ["", *(column_title(n, c) for n, c in zip(names, view.columns, strict=True))]
    for n in names[1:]:
        if joined:
            columns.append(f"{n}/{base}, verdict")
        else:
            columns += [f"{n}/{base}", "verdict" if len(names) == 2 else f"verdict {n}"]
    per_candidate = 1 if joined else 2
    rows: list[list[Cell]] = []
    for c in view.context:
        style = "warn" if c.differs else None
        cells = [Cell([c.label], "muted"), *(Cell([v], style) for v in c.values)]
        rows.append(cells + [Cell([""]) for _ in range(per_candidate * (len(names) - 1))])
    for m in view.metrics:
        cells = [Cell([m.label]), Cell([m.base]), *(Cell([d.text]) for d in m.others)]
        for d in m.others:
            style = d.style or d.trend or None
            if joined:
                cells.append(Cell([d.ratio or "-", *([d.verdict] if d.verdict else [])], style))
            else:
                cells += [Cell([d.ratio or "-"], style), Cell([d.verdict or ""], style)]
        rows.append(cells)
    numeric = frozenset(range(1, 1 + len(names)))
    return Table(columns, rows, None, numeric)


def settings_table(view: ComparisonView, names: Sequence[str]) -> Table:
    """The settings that differ, in human units, with the layer that set each."""
    rows = [[s.label, *s.values] for s in view.settings]
    same = view.same_settings
    note = (
        f"{same} non-default setting{'s' if same != 1 else ''} the same in every run"
        if same
        else None
    )
    return Table.build(["setting (layer)", *names], rows, caption="Settings that differ", note=note)


def hosts_table(view: ComparisonView, names: Sequence[str]) -> Table | None:
    """Every host of the compared runs, per role: CPU busy, iowait, steal, saturation (None:
    no run had per-host figures)."""
    return compare_hosts.table(view.hosts, names)
