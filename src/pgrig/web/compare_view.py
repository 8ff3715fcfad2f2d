"""The compare page: two or more runs, or groups of repeats, side by side; the first column is
the baseline.

Ratios, bounds and verdicts come from the comparison engine (pgrig.analysis.compare), the one
`pgrig runs compare` and `pgrig report compare` use: the same runs give the same answer here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from markupsafe import Markup

from pgrig.analysis.compare import (
    BLOCK_S,
    DEFAULT_MISRATE,
    DEFAULT_THRESHOLD,
    compare_runs,
    format_ratio,
    group_value,
    study_point_groups,
)
from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.insights.changes import tables, what_changed
from pgrig.insights.summary import TextTable
from pgrig.reports.run_charts import overlay_charts
from pgrig.reports.summary import verdict_style
from pgrig.reports.svg import render
from pgrig.request.values import check_int64
from pgrig.web import format as fmt
from pgrig.web.run_view import _layer_of
from pgrig.web.runs_view import cpus_of, duration_of
from pgrig.web.study_view import CELL_STYLES

MAX_GROUPS = 12
MAX_RUNS = 60  # in all groups together
METHOD_NOTE = (
    f"Ratios are candidate / baseline, x1.234 [lower, upper], with a verdict at a "
    f"{DEFAULT_THRESHOLD:.0%} threshold and {1 - DEFAULT_MISRATE:.0%} bounds from the comparison "
    "engine that `pgrig runs compare` and `pgrig report compare` use: with two or more runs per "
    f"column, over the runs (repeats); with single runs, over block means of at least "
    f"{BLOCK_S:g} s of their per-second values, which is indicative only (one run cannot show "
    "run-to-run variation)."
)


def parse_groups(ids: list[str], groups: list[str]) -> list[list[int]]:
    """The columns to compare, the first being the baseline.

    ?group=1,2,3&group=4-6: groups of repeats (the run lists of `pgrig runs compare`).
    ?ids=5,3: single runs in the order written; the runs page's checkboxes send ?ids=5&ids=3
    (newest first), so repeated ids parameters are sorted oldest first, which makes the older
    run the baseline. Duplicates are dropped."""
    from pgrig.reports.publish import parse_groups as parse_run_lists

    if ids and groups:
        raise PgrigError("use ids= (single runs) or group= (groups of repeats), not both")
    out = parse_run_lists(groups) if groups else [[i] for i in parse_ids(ids)]
    if len(out) < 2:
        raise PgrigError(
            "pick at least two runs or groups to compare (ids=1,2 or group=1,2&group=3,4)"
        )
    if len(out) > MAX_GROUPS:
        raise PgrigError(f"compare at most {MAX_GROUPS} runs or groups at once")
    if sum(map(len, out)) > MAX_RUNS:
        raise PgrigError(f"compare at most {MAX_RUNS} runs in all groups at once")
    return out


def parse_ids(values: list[str]) -> list[int]:
    ids: list[int] = []
    for v in values:
        for part in v.replace(" ", ",").split(","):
            if not part:
                continue
            try:
                n = check_int64(int(part), "run id")
            except ValueError:
                raise PgrigError(f"run ids must be whole numbers, not {part!r}") from None
            if n not in ids:
                ids.append(n)
    if len(values) > 1:
        ids.sort()
    return ids


def compare_url(groups: list[list[int]]) -> str:
    """The page for these columns: ?ids= when every column is one run, else ?group=."""
    if all(len(g) == 1 for g in groups):
        return "/compare?ids=" + ",".join(str(g[0]) for g in groups)
    return "/compare?" + "&".join("group=" + ",".join(map(str, g)) for g in groups)


def baseline_url(groups: list[list[int]], index: int) -> str:
    """The same comparison with column `index` as the baseline."""
    return compare_url([groups[index], *(g for i, g in enumerate(groups) if i != index)])


@dataclass(frozen=True)
class Metric:
    label: str
    get: Callable[[RunRecord], Any]
    show: Callable[[Any], str]
    engine: str | None = None  # the comparison engine's metric (ratio, bounds, verdict)


METRICS = (
    Metric("TPS", lambda r: r.tps, fmt.num, "tps"),
    Metric("NOPM", lambda r: r.nopm, fmt.num, "nopm"),
    Metric("TPM", lambda r: r.tpm, fmt.num, "tpm"),
    Metric("Latency avg, ms", lambda r: r.latency.avg, fmt.ms, "latency.avg"),
    Metric("Latency p50, ms", lambda r: r.latency.p50, fmt.ms, "latency.p50"),
    Metric("Latency p95, ms", lambda r: r.latency.p95, fmt.ms, "latency.p95"),
    Metric("Latency p99, ms", lambda r: r.latency.p99, fmt.ms, "latency.p99"),
    Metric("Latency max, ms", lambda r: r.latency.max, fmt.ms),
    Metric("Transactions", lambda r: r.transactions, fmt.num),
    Metric("Failed", lambda r: r.failed, fmt.num),
    Metric("CPU user %", lambda r: r.cpu_user, fmt.num),
    Metric("CPU system %", lambda r: r.cpu_system, fmt.num),
    Metric("CPU iowait %", lambda r: r.cpu_iowait, fmt.num),
    Metric("Cache hit ratio %", lambda r: r.hit_ratio, lambda v: fmt.num(v, 2)),
)


@dataclass
class Delta:
    """One candidate column's figure against the baseline's."""

    text: str
    ratio: str | None = None  # "x1.234 [1.011, 1.123]" (bounds only from the engine)
    verdict: str | None = None  # the engine's verdict text, or "no verdict: <reason>"
    basis: str | None = None  # what the bounds were computed from
    detail: str | None = None  # the engine's one-line description
    style: str = ""  # good | bad | same | muted | ""


@dataclass
class MetricRow:
    label: str
    base: str
    others: list[Delta]


@dataclass
class SetupRow:
    label: str
    values: list[str]
    differs: bool


@dataclass
class Column:
    """One configuration: a run, or repeats of it."""

    runs: list[RunRecord]

    @property
    def ids(self) -> list[int]:
        return [r.id for r in self.runs if r.id is not None]

    @property
    def note(self) -> str:
        first = self.runs[0]
        return first.note or first.study_point or first.workload


@dataclass
class Changes:
    """What changed from the baseline to one column (pgrig.insights.changes)."""

    column: Column
    tables: list[TextTable]


@dataclass
class ComparePage:
    columns: list[Column]
    metrics: list[MetricRow]
    setup: list[SetupRow]
    settings: list[SetupRow]
    same_settings: int  # non-default settings equal in every run
    charts: list[Markup]
    repeats_url: str | None = None  # the same comparison over the runs' study points
    method_note: str = METHOD_NOTE
    changes: list[Changes] = field(default_factory=list)  # each column against the baseline

    @property
    def groups(self) -> list[list[int]]:
        return [c.ids for c in self.columns]

    @property
    def runs(self) -> list[RunRecord]:
        return [r for c in self.columns for r in c.runs]


def build(groups: list[list[RunRecord]], repeats_url: str | None = None) -> ComparePage:
    columns = [Column(g) for g in groups]
    base = groups[0]
    rows: list[MetricRow] = []
    for m in METRICS:
        values = [group_value(g, m.get) for g in groups]
        if all(v is None for v in values):
            continue
        others = [
            _delta(m, base, g, v, values[0]) for g, v in zip(groups[1:], values[1:], strict=True)
        ]
        rows.append(MetricRow(m.label, m.show(values[0]), others))
    settings, same = settings_diff(columns)
    runs = [r for g in groups for r in g]
    charts = [render(c) for c in overlay_charts([(run_label(r), r.series) for r in runs])]
    changes = [Changes(c, tables(what_changed(base, c.runs))) for c in columns[1:]]
    return ComparePage(
        columns, rows, setup_rows(columns), settings, same, charts, repeats_url, changes=changes
    )


def study_repeats_url(archive: Any, groups: list[list[RunRecord]]) -> str | None:
    """The page comparing the repeats of these single runs' study points, if they have any."""
    points = study_point_groups(archive, groups)
    return compare_url(points) if points else None


def _delta(
    m: Metric, base: list[RunRecord], cand: list[RunRecord], value: Any, base_value: Any
) -> Delta:
    d = Delta(m.show(value))
    if m.engine is None:
        if value is not None and base_value:
            d.ratio = format_ratio(value / base_value)
        return d
    c = compare_runs(base, cand, m.engine)
    d.ratio = c.ratio_text() if c.ratio is not None else None
    d.verdict, d.basis, d.detail = c.verdict_text(), c.basis() or None, c.describe()
    d.style = CELL_STYLES.get(verdict_style(c.verdict), "")
    return d


def _eq(values: list[str]) -> bool:
    return len(set(values)) <= 1


def _column_value(col: Column, get: Callable[[RunRecord], Any]) -> str:
    """One value when the column's runs agree, else every distinct value ('a / b')."""
    values = [get(r) for r in col.runs]
    shown = list(dict.fromkeys(str(v) if v not in (None, "") else "–" for v in values))
    return " / ".join(shown)


def setup_rows(columns: list[Column]) -> list[SetupRow]:
    def row(label: str, get: Callable[[RunRecord], Any]) -> SetupRow:
        values = [_column_value(c, get) for c in columns]
        return SetupRow(label, values, not _eq(values))

    return [
        row("Status", lambda r: r.status),
        row("Started", lambda r: fmt.when(r.started_at)),
        row("Environment", lambda r: r.env_name),
        row("Engine", lambda r: fmt.engine(r.engine, r.server_version)),
        row("Host", lambda r: r.host.get("hostname")),
        row("CPUs", cpus_of),
        row("Workload", lambda r: r.workload),
        row("Scale", lambda r: r.scale),
        row("Data volume", lambda r: fmt.size(r.db_size_bytes) if r.db_size_bytes else None),
        row("Clients / threads", lambda r: f"{r.clients} / {r.threads}"),
        row("Duration", lambda r: fmt.duration(duration_of(r))),
        row("Warm-up", lambda r: fmt.duration(r.warmup_s)),
        row("Rate limit", lambda r: r.rate),
        row("Protocol", lambda r: r.protocol),
        row("Via", lambda r: r.via),
        row("Study point", lambda r: r.study_point),
    ]


def _setting_of(name: str, r: RunRecord) -> str:
    return fmt.setting_value(r.settings.get(name), name)


def settings_diff(columns: list[Column]) -> tuple[list[SetupRow], int]:
    """Settings whose value is not the same in every run, and how many non-default ones are."""
    runs = [r for c in columns for r in c.runs]
    names: set[str] = set()
    for r in runs:
        names.update(r.non_default_settings())
    for r in runs:  # a setting may be default in one run and absent from another's snapshot
        names.update(n for n in r.settings if any(n not in o.settings for o in runs))
    diff, same = [], 0
    for name in sorted(names):
        if _eq([_setting_of(name, r) for r in runs]):
            same += 1
            continue
        values = [_column_value(c, partial(_setting_of, name)) for c in columns]
        layers = {_layer_of(r.settings_layers, name) for r in runs} - {""}
        label = f"{name} ({', '.join(sorted(layers))})" if layers else name
        diff.append(SetupRow(label, values, True))
    return diff, same


def run_label(rec: RunRecord) -> str:
    note = (rec.note or rec.study_point or rec.workload or "").strip()
    return f"#{rec.id} {note[:30]}".strip()
