"""The compare page: two or more runs side by side, the first one being the baseline.

Ratios and verdicts come from pgrig.analysis.stats.compare over the per-second samples of the
measured window (t >= 0); the web layer only picks the samples and shows the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from markupsafe import Markup

from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.reports.run_charts import overlay_charts
from pgrig.reports.svg import render
from pgrig.web import format as fmt
from pgrig.web.run_view import _layer_of
from pgrig.web.runs_view import cpus_of, duration_of

MAX_RUNS = 12
MIN_SAMPLES = 3  # fewer blocks than this: no statistics, ratio only
MIN_BLOCK_S = 5.0  # shortest stretch of a run whose mean is one sample
BLOCKS = 10
METHOD_NOTE = (
    "Bounds and verdicts (threshold 2%, 95%) come from the repeats of each run's study point "
    "when both have two or more; otherwise from the means of 10 equal stretches of each run's "
    "measured window, which is indicative only: one run cannot show run-to-run variation."
)


def parse_ids(values: list[str]) -> list[int]:
    """Run ids, the first being the baseline. ?ids=5,3 keeps the order written; the runs
    page's checkboxes send ?ids=5&ids=3 (newest first), so repeated parameters are sorted
    oldest first, which makes the older run the baseline. Duplicates are dropped."""
    ids: list[int] = []
    for v in values:
        for part in v.replace(" ", ",").split(","):
            if not part:
                continue
            try:
                n = int(part)
            except ValueError:
                raise PgrigError(f"run ids must be whole numbers, not {part!r}") from None
            if n not in ids:
                ids.append(n)
    if len(values) > 1:
        ids.sort()
    if len(ids) < 2:
        raise PgrigError("pick at least two runs to compare (ids=1,2)")
    if len(ids) > MAX_RUNS:
        raise PgrigError(f"compare at most {MAX_RUNS} runs at once")
    return ids


def baseline_url(ids: list[int], first: int) -> str:
    """The same comparison with run `first` as the baseline."""
    order = [first, *(i for i in ids if i != first)]
    return "/compare?ids=" + ",".join(map(str, order))


@dataclass(frozen=True)
class Metric:
    label: str
    get: Callable[[RunRecord], float | None]
    show: Callable[[Any], str]
    higher_is_better: bool | None  # None: no direction, no verdict
    samples: tuple[str, tuple[str, ...]] | None = None  # (series kind, candidate columns)


METRICS = (
    Metric("TPS", lambda r: r.tps, fmt.num, True, ("pgbench", ("tps",))),
    Metric("NOPM", lambda r: r.nopm, fmt.num, True),
    Metric("TPM", lambda r: r.tpm, fmt.num, True),
    Metric(
        "Latency avg, ms",
        lambda r: r.latency.avg,
        fmt.ms,
        False,
        ("pgbench", ("lat_avg", "avg", "latency_avg")),
    ),
    Metric("Latency p50, ms", lambda r: r.latency.p50, fmt.ms, False, ("pgbench", ("p50",))),
    Metric("Latency p95, ms", lambda r: r.latency.p95, fmt.ms, False, ("pgbench", ("p95",))),
    Metric("Latency p99, ms", lambda r: r.latency.p99, fmt.ms, False, ("pgbench", ("p99",))),
    Metric("Latency max, ms", lambda r: r.latency.max, fmt.ms, False),
    Metric("Transactions", lambda r: r.transactions, fmt.num, None),
    Metric("Failed", lambda r: r.failed, fmt.num, False),
    Metric("CPU user %", lambda r: r.cpu_user, fmt.num, None),
    Metric("CPU system %", lambda r: r.cpu_system, fmt.num, None),
    Metric("CPU iowait %", lambda r: r.cpu_iowait, fmt.num, None),
    Metric("Cache hit ratio %", lambda r: r.hit_ratio, lambda v: fmt.num(v, 2), None),
)


@dataclass
class Delta:
    """One candidate's figure against the baseline's."""

    text: str
    ratio: float | None = None
    bounds: str | None = None  # "[0.981, 1.012]" when statistics were computed
    verdict: str | None = None  # the statistics' verdict word, if computed
    basis: str | None = None  # what the statistics were computed from
    detail: str | None = None  # describe(): interval and verdict in words
    style: str = ""  # good | bad | same | ""


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
class ComparePage:
    runs: list[RunRecord]
    metrics: list[MetricRow]
    setup: list[SetupRow]
    settings: list[SetupRow]
    same_settings: int  # non-default settings equal in every run
    charts: list[Markup]
    method_note: str = METHOD_NOTE


def build(runs: list[RunRecord], repeats: dict[int, list[RunRecord]] | None = None) -> ComparePage:
    """`repeats`: run id → the ok runs of its study point (itself included), when it has any."""
    repeats = repeats or {}
    base = runs[0]
    rows: list[MetricRow] = []
    for m in METRICS:
        values = [m.get(r) for r in runs]
        if all(v is None for v in values):
            continue
        others = [_delta(m, base, r, repeats) for r in runs[1:]]
        rows.append(MetricRow(m.label, m.show(values[0]), others))
    settings, same = settings_diff(runs)
    charts = [render(c) for c in overlay_charts([(run_label(r), r.series) for r in runs])]
    return ComparePage(runs, rows, setup_rows(runs), settings, same, charts)


def study_repeats(archive: Any, runs: list[RunRecord]) -> dict[int, list[RunRecord]]:
    """For each study run: the ok runs of its study point (light records, itself included)."""
    by_study: dict[str, list[RunRecord]] = {}
    out: dict[int, list[RunRecord]] = {}
    for r in runs:
        if not r.study or not r.study_point or r.id is None:
            continue
        if r.study not in by_study:
            by_study[r.study] = archive.study_runs(r.study)
        out[r.id] = [
            s for s in by_study[r.study] if s.study_point == r.study_point and s.status == "ok"
        ]
    return out


def _block_samples(m: Metric, rec: RunRecord) -> list[float]:
    if m.samples is None:
        return []
    kind, names = m.samples
    cols = rec.series.get(kind) or {}
    for name in names:
        if name in cols:
            return block_means(cols.get("t") or [], cols[name])
    return []


def block_means(
    t: list[float | None],
    y: list[float | None],
    blocks: int = BLOCKS,
    min_block_s: float = MIN_BLOCK_S,
) -> list[float]:
    """Means of `blocks` equal stretches of the measured window (t >= 0), each at least
    min_block_s long. Block means are far less autocorrelated than per-second values (the
    batch-means method), so comparing them says something about one run against another."""
    n = min(len(t), len(y))
    ta = np.asarray(t[:n], dtype=float)  # None → NaN
    ya = np.asarray(y[:n], dtype=float)
    keep = np.isfinite(ta) & np.isfinite(ya) & (ta >= 0)
    ta, ya = ta[keep], ya[keep]
    if ta.size == 0:
        return []
    start = float(ta.min())
    span = float(ta.max()) - start + 1.0
    k = min(blocks, int(span // min_block_s))
    if k < MIN_SAMPLES:
        return []
    which = np.minimum(k - 1, ((ta - start) / (span / k)).astype(int))
    sums = np.bincount(which, weights=ya, minlength=k)
    counts = np.bincount(which, minlength=k)
    return [float(sums[i] / counts[i]) for i in range(k) if counts[i]]


def _delta(
    m: Metric, base: RunRecord, cand: RunRecord, repeats: dict[int, list[RunRecord]]
) -> Delta:
    b, c = m.get(base), m.get(cand)
    text = m.show(c)
    if b is None or c is None:
        return Delta(text)
    d = Delta(text, c / b if b else None)
    if m.higher_is_better is None:
        return d
    rb = [v for v in (m.get(r) for r in repeats.get(base.id or -1, [])) if v]
    rc = [v for v in (m.get(r) for r in repeats.get(cand.id or -1, [])) if v]
    if len(rb) >= 2 and len(rc) >= 2:
        bs, cs, basis = rb, rc, f"{len(rb)} vs {len(rc)} repeats"
    else:
        bs, cs = _block_samples(m, base), _block_samples(m, cand)
        basis = f"{len(bs)} vs {len(cs)} blocks, indicative"
    if not bs or not cs or min(bs + cs) <= 0:
        if m.samples is not None:  # a figure that could have had a verdict: say why not
            d.basis = f"no verdict: no repeats, and under {MIN_SAMPLES * MIN_BLOCK_S:g} s measured"
        return d
    result = compare_samples(bs, cs, m.higher_is_better)
    if result is not None:
        d.ratio, lower, upper, d.verdict, d.detail = result
        d.bounds = f"[{lower:.3f}, {upper:.3f}]"
        d.basis = basis
        d.style = verdict_style(d.verdict)
    return d


def compare_samples(
    base: list[float], cand: list[float], higher_is_better: bool
) -> tuple[float, float, float, str, str] | None:
    """(ratio, lower, upper, verdict, description) from pgrig.analysis.stats.compare."""
    try:
        from pgrig.analysis.stats import compare
    except ImportError:  # statistics not installed in this build: show plain ratios
        return None
    c = compare(base, cand, higher_is_better=higher_is_better)
    return c.ratio, c.lower, c.upper, str(c.verdict), c.describe()


def verdict_style(verdict: str | None) -> str:
    """CSS class for a verdict word, whatever exact vocabulary the statistics use."""
    v = (verdict or "").lower()
    if any(w in v for w in ("regress", "worse", "slower")):
        return "bad"
    if any(w in v for w in ("improv", "better", "faster")):
        return "good"
    if any(w in v for w in ("same", "equiv", "no change", "unchanged", "noise")):
        return "same"
    return ""


def _eq(values: list[str]) -> bool:
    return len(set(values)) <= 1


def setup_rows(runs: list[RunRecord]) -> list[SetupRow]:
    def row(label: str, get: Callable[[RunRecord], Any]) -> SetupRow:
        values = [str(get(r)) if get(r) not in (None, "") else "–" for r in runs]
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


def settings_diff(runs: list[RunRecord]) -> tuple[list[SetupRow], int]:
    """Settings whose value is not the same in every run, and how many non-default ones are."""
    names: set[str] = set()
    for r in runs:
        names.update(r.non_default_settings())
    for r in runs:  # a setting may be default in one run and absent from another's snapshot
        names.update(n for n in r.settings if any(n not in o.settings for o in runs))
    diff, same = [], 0
    for name in sorted(names):
        values = [fmt.setting_value(r.settings.get(name)) for r in runs]
        if _eq(values):
            same += 1
            continue
        layers = {_layer_of(r.settings_layers, name) for r in runs} - {""}
        label = f"{name} ({', '.join(sorted(layers))})" if layers else name
        diff.append(SetupRow(label, values, True))
    return diff, same


def run_label(rec: RunRecord) -> str:
    note = (rec.note or rec.study_point or rec.workload or "").strip()
    return f"#{rec.id} {note[:30]}".strip()
