"""The figures of a study, computed from archived runs (never from the study runner): the data
under the study view (views/study.py), which `study show`, the study page and the study
report render.

Per point: the robust centre (Hodges-Lehmann) of the repeats' TPS with its distribution-free
bounds, latency and host figures as centres over repeats, and the per-run stability (CV of
per-second TPS, drift). Between points: the comparison engine's ratio, bounds and verdict at
the study's threshold (analysis/compare.py: repeats, or indicative block means of single runs).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from pgrig import format
from pgrig.analysis.compare import Comparison, compare_runs
from pgrig.archive.protocol import RunReader
from pgrig.archive.records import RunRecord, StudyRecord
from pgrig.record.documents import ChangePointDoc
from pgrig.record.figures import BY_KEY, Figure
from pgrig.record.json_values import number
from pgrig.record.run import RunSeries, SeriesColumns
from pgrig.study import plan as planning
from pgrig.study import spec as study_spec
from pgrig.study.plan import Plan, Point
from pgrig.study.spec import StudySpec

_LAT_COL = re.compile(r"^(?:lat_?)?(p\d+|avg|max)(?:_ms)?$")


@dataclass
class Interval:
    center: float
    lower: float
    upper: float
    n: int
    insufficient: bool = False  # fewer repeats than the misrate needs: widest bounds shown


@dataclass
class RunStability:
    """One run's behaviour over time: the whole seconds of its measured window, per-second TPS.

    Runs keep these figures (extra["stability"], computed once when the run ended); older runs
    get them from their series, over the same whole seconds."""

    run_id: int | None
    cv: float | None = None  # coefficient of variation of per-second TPS
    trend_pct_per_min: float | None = None
    first_last_pct: float | None = None  # last fifth vs first fifth, in %
    drift: bool = False
    reasons: list[str] = field(default_factory=list)  # why drift was flagged
    change_points: list[ChangePointDoc] = field(default_factory=list)  # t, change_pct, ...
    seconds: int = 0  # whole seconds the figures are computed over
    warmup_s: float = 0.0
    warmup_tps: float | None = None  # mean per-second TPS during the warm-up
    measured_tps: float | None = None  # mean per-second TPS in the measured window

    def describe(self) -> str:
        if self.cv is None:
            return "no per-second data"
        text = f"CV {self.cv * 100:.1f}%"
        if self.trend_pct_per_min is not None:
            text += f", trend {self.trend_pct_per_min:+.1f}%/min"
        if self.first_last_pct is not None:
            text += f", last vs first fifth {self.first_last_pct:+.1f}%"
        if self.change_points:
            shifts = ", ".join(
                f"t={c['t']:g}s {c['change_pct']:+.1f}%"
                for c in self.change_points
                if c.get("t") is not None and c.get("change_pct") is not None
            )
            text += f", change points {shifts}"
        if self.drift:
            text += " (DRIFT: " + "; ".join(self.reasons) + ")" if self.reasons else " (DRIFT)"
        return text


@dataclass
class PointSummary:
    point: Point
    runs: list[RunRecord]  # every run of the point (any status), oldest first
    ok: list[RunRecord]  # the successful runs used for the figures (latest per repeat)
    # what the point is judged on (the study's plan.figure): TPS, or a TPC-H test's figure,
    # whose interval `tps` then holds
    figure: Figure = BY_KEY["tps"]
    tps: Interval | None = None
    nopm: float | None = None
    latency: dict[str, float | None] = field(default_factory=dict)  # p50/p95/p99 centres
    cpu: dict[str, float | None] = field(default_factory=dict)  # user/system/iowait/idle
    hit_ratio: float | None = None
    stability: list[RunStability] = field(default_factory=list)

    @property
    def evidence(self) -> list[str]:
        """What the point's runs show (pgrig.insights.changes.evidence), per run."""
        from pgrig.insights.changes import evidence

        return evidence(self.ok)

    @property
    def samples(self) -> list[float]:
        """The point's figure per ok run (TPS, or a TPC-H test's own: StudyData.figure)."""
        values = [self.figure.value(r) for r in self.ok]
        return [v for v in values if v is not None and v > 0]

    @property
    def failed(self) -> int:
        return sum(1 for r in self.runs if r.status not in ("ok", "running"))

    @property
    def drift_runs(self) -> int:
        return sum(1 for s in self.stability if s.drift)

    @property
    def max_cv(self) -> float | None:
        cvs = [s.cv for s in self.stability if s.cv is not None]
        return max(cvs) if cvs else None


@dataclass
class StudyData:
    record: StudyRecord
    spec: StudySpec
    plan: Plan
    points: list[PointSummary]
    orphans: list[RunRecord]  # runs whose point is not in the plan (should not happen)


def robust_center(values: list[float]) -> float | None:
    from pgrig.analysis import stats

    vals = [v for v in values if v is not None and math.isfinite(v)]
    return stats.center(vals) if vals else None


def interval(values: list[float], misrate: float) -> Interval | None:
    from pgrig.analysis import stats

    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return None
    b = stats.center_bounds(vals, misrate)
    return Interval(stats.center(vals), b.lower, b.upper, len(vals), b.insufficient)


def compare_points(
    baseline: PointSummary, candidate: PointSummary, threshold: float, misrate: float
) -> Comparison | None:
    """The study's figure (TPS, or a TPC-H test's own) of one point's ok runs against
    another's (the engine picks the method)."""
    if not baseline.ok or not candidate.ok:
        return None
    return compare_runs(baseline.ok, candidate.ok, baseline.figure.key, threshold, misrate)


def run_stability(rec: RunRecord, series: RunSeries | None = None) -> RunStability:
    """Stability of one run's per-second TPS over the whole seconds of its measured window."""
    import dataclasses

    from pgrig.analysis import series as series_mod
    from pgrig.analysis.compare import measured_seconds

    if series is not None:
        rec = dataclasses.replace(rec, series=series)
    cols = rec.series.get("pgbench") or {}
    t, y = cols.get("t") or [], cols.get("tps") or []
    warm = [b for a, b in zip(t, y, strict=False) if a is not None and b is not None and a < 0]
    # whole seconds only (a partial last second would look like a collapse)
    mt, my = measured_seconds(rec, "tps")
    out = RunStability(rec.id, warmup_s=rec.warmup_s or 0.0)
    if warm:
        out.warmup_tps = sum(warm) / len(warm)
    if my.size:
        out.measured_tps = float(my.mean())
    stored = (rec.extra or {}).get("stability")
    if not isinstance(stored, dict):  # runs archived before stability was stored with them
        if my.size < 3:
            return out
        stored = {"seconds": int(my.size), **series_mod.stability(mt, my).as_record()}
    out.seconds = int(stored.get("seconds") or stored.get("n") or 0)
    if out.seconds < 3:
        return out
    out.cv = number(stored.get("cv"))
    if out.seconds < series_mod.MIN_POINTS_DRIFT:
        return out  # a trend over a few seconds says nothing: keep only the CV
    out.trend_pct_per_min = number(stored.get("trend_pct_per_min"))
    out.first_last_pct = number(stored.get("first_last_change_pct"))
    out.drift = bool(stored.get("drift_flagged"))
    out.reasons = [str(r) for r in stored.get("reasons") or [] if out.drift]
    out.change_points = [ChangePointDoc(**c) for c in stored.get("change_points") or []]
    return out


def latency_columns(cols: SeriesColumns) -> list[str]:
    """Latency columns of a "pgbench" series, p50 < p95 < p99 < max order."""
    found = [k for k in cols if k not in ("t", "tps") and _LAT_COL.match(k)]

    def rank(k: str) -> float:
        m = _LAT_COL.match(k)
        tag = m.group(1) if m else k
        if tag == "avg":
            return -1
        if tag == "max":
            return 1e9
        digits = tag[1:]  # p50 -> 50, p999 -> 99.9
        return float(f"{digits[:2]}.{digits[2:] or 0}")

    return sorted(found, key=rank)


def summarize_point(
    point: Point,
    runs: list[RunRecord],
    misrate: float,
    series: dict[int, RunSeries],
    figure: Figure = BY_KEY["tps"],
) -> PointSummary:
    latest: dict[int, RunRecord] = {}
    for r in runs:
        if r.status == "ok":
            latest[r.repeat] = r  # runs come oldest first: a re-run replaces its repeat
    ok = [latest[k] for k in sorted(latest)]
    ps = PointSummary(point, runs, ok, figure)
    ps.tps = interval(ps.samples, misrate)
    ps.nopm = robust_center([r.nopm for r in ok if r.nopm is not None])
    for q in ("p50", "p95", "p99"):
        ps.latency[q] = robust_center([getattr(r.latency, q) for r in ok if getattr(r.latency, q)])
    for k in ("user", "system", "iowait", "idle"):
        vals = [getattr(r, f"cpu_{k}") for r in ok if getattr(r, f"cpu_{k}") is not None]
        ps.cpu[k] = robust_center(vals)
    ps.hit_ratio = robust_center([r.hit_ratio for r in ok if r.hit_ratio is not None])
    ps.stability = [run_stability(r, series.get(r.id or -1, {})) for r in ok]
    return ps


def load_study(
    archive: RunReader, name: str, with_series: bool = True, with_evidence: bool = False
) -> StudyData:
    """A study's record, its re-parsed plan, and a summary per point, from the archive.
    with_series: per-second TPS for the stability figures, and the evidence; with_evidence:
    only the evidence (the runs' insights, host and extra)."""
    from pathlib import Path

    record = archive.get_study(name)
    base = Path(record.extra.get("base_dir", ".")) if record.extra else Path(".")
    spec = study_spec.parse(record.spec, base_dir=base, name=record.name, check_files=False)
    plan = planning.build(spec)
    runs = archive.study_runs(name)
    by_point: dict[str, list[RunRecord]] = {p.key: [] for p in plan.points}
    orphans: list[RunRecord] = []
    for r in runs:
        by_point.get(r.study_point or "", orphans).append(r)
    series: dict[int, dict[str, Any]] = {}
    if with_series or with_evidence:  # the evidence: insights, host, extra
        archive.add_blobs([r for r in runs if r.status == "ok"], ("host", "insights", "extra"))
    for r in runs:
        if r.status != "ok" or r.id is None or not (with_series or with_evidence):
            continue
        # the reports: per-second TPS; every surface: the samplers of the run's hosts
        kinds = (["pgbench"] if with_series else []) + host_series_kinds(r)
        if kinds:
            r.series = archive.run_series(r.id, kinds)
            if with_series:
                series[r.id] = {"pgbench": r.series.get("pgbench") or {}}
    points = [
        summarize_point(p, by_point[p.key], spec.misrate, series, plan.figure) for p in plan.points
    ]
    return StudyData(record, spec, plan, points, orphans)


def host_series_kinds(rec: RunRecord) -> list[str]:
    """The sampler series of a run's hosts (views/study_hosts.py): "os@HOST" for each host
    the run names in extra (its roles, its load hosts) and this machine's "os" beside them;
    none for a run on this machine alone."""
    extra = rec.extra or {}
    hosts = list(extra.get("host_roles") or {})
    hosts += [h for h in (extra.get("load") or {}).get("hosts") or {} if h not in hosts]
    return [f"os@{h}" for h in hosts] + ["os"] if hosts else []


# --- formatting shared by the report builders -------------------------------------------------
def short_version(version: str | None) -> str | None:
    """'PostgreSQL 15.18 (Debian ...) on x86_64 ...' -> '15.18'; other strings unchanged."""
    return format.version(version) if version else None


def fmt(v: float | None, digits: int = 1, unit: str = "") -> str:
    """A number by pgrig/format.py's rule, with `unit` appended."""
    text = format.number(v, digits)
    return text if text == format.MISSING else text + unit


def fmt_interval(iv: Interval | None, digits: int = 1) -> list[str]:
    if iv is None:
        return ["-"]
    lines = [fmt(iv.center, digits), f"[{fmt(iv.lower, digits)}, {fmt(iv.upper, digits)}]"]
    if iv.insufficient:
        lines[1] += " (range)"
    return lines
