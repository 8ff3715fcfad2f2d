"""What a series says, computed once: every surface (`track show`, `--check`, the report, the
web page) renders this.

- per version: the ok runs, their centre (Hodges-Lehmann) and 95% bounds (analysis/stats.py),
  the binaries' source, status and any reason it was skipped or failed;
- steps: each measured version against the previous one with the comparison engine
  (analysis/compare.py: ratio, bounds, verdict at the threshold);
- change points: e-divisive means over all ok runs in version order, cuts only between
  versions (analysis/changepoints.py), each with its magnitude, position and confidence;
- check (CI): the newest measured version against the one before it: a regression is the
  engine's "slower" verdict (worse, whatever the metric's direction) at 95%.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from pgrig.analysis import changepoints, stats
from pgrig.analysis.compare import METRICS, Comparison, compare_runs
from pgrig.archive.records import RunRecord
from pgrig.insights.changes import evidence
from pgrig.record.protocol import RunReader
from pgrig.track.runner import Series
from pgrig.track.versions import VersionPoint

DEFAULT_THRESHOLD = 0.02
# Settings that differ between the clusters of one series by construction, not by choice.
PER_ENVIRONMENT = {"port", "unix_socket_directories", "data_directory", "hba_file", "ident_file"}


@dataclass
class PointView:
    version: str
    status: str
    source: str | None
    reason: str | None
    env: str | None
    role: str
    runs: list[int]
    values: list[float]
    centre: float | None = None
    lower: float | None = None
    upper: float | None = None
    confidence: float | None = None
    server_only: bool = False
    client_tools: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)  # non-default, from its newest run
    host: str | None = None
    server_version: str | None = None
    pgbench_version: str | None = None
    warnings: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)  # what its runs show (insights)


@dataclass
class SeriesView:
    name: str
    status: str
    measures: str
    metric: str
    metric_label: str
    higher_is_better: bool
    threshold: float
    points: list[PointView]
    steps: list[dict[str, Any]]
    changes: list[dict[str, Any]]
    detection: dict[str, Any]
    bisections: list[dict[str, Any]] = field(default_factory=list)
    check: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def measured(self) -> list[PointView]:
        return [p for p in self.points if p.values]


def build(
    series: Series,
    threshold: float = DEFAULT_THRESHOLD,
    archive: RunReader | None = None,
    seed: int = 0,
) -> SeriesView:
    """The view of `series`; with `archive`, each point's settings and host come from the full
    record of its newest run (the series' own run list holds light records)."""
    metric = METRICS[series.spec.metric]
    by_version: dict[str, list[RunRecord]] = {}
    for r in series.runs:
        if r.status == "ok" and r.study_point and metric.value(r):
            by_version.setdefault(r.study_point, []).append(r)
    if archive is not None:  # a single run is compared by its per-second blocks: full record
        for v, runs in by_version.items():
            if len(runs) == 1 and runs[0].id is not None:
                by_version[v] = [archive.get_run(runs[0].id)]
        light = [r for runs in by_version.values() for r in runs if not r.insights]
        archive.add_blobs(light, ("insights",))  # the evidence beside each step
    points = [
        _point(p, by_version.get(p.version, []), metric.value, archive) for p in series.points
    ]
    measured = [p for p in points if p.values]
    steps = []
    insights = series.spec.insights
    for prev, cur in itertools.pairwise(measured):
        caveats = []
        if prev.source != cur.source and "maven" in (prev.source, cur.source):
            caveats.append(
                f"different builds: {prev.source} -> {cur.source} (compilers and options "
                "differ; a step here may be the build, not the release)"
            )
        if insights and prev.server_only != cur.server_only:
            caveats.append(
                "settings differ: the server-only build runs without the insights layer "
                "(pg_stat_statements, auto_explain); measure with --no-insights to compare"
            )
        cmp = compare_runs(by_version[prev.version], by_version[cur.version], metric.key, threshold)
        steps.append(
            {"from": prev.version, "to": cur.version, **_comparison(cmp), "caveats": caveats}
        )
    values = [v for p in measured for v in p.values]
    groups = [p.version for p in measured for _ in p.values]
    labels = list(groups)
    if len(values) >= 2 * changepoints.MIN_SIZE:
        found = changepoints.detect(values, labels, groups=groups, seed=seed).to_dict()
    else:
        found = {
            "method": "e-divisive means, permutation test",
            "max_p_value": changepoints.MAX_P_VALUE,
            "permutations": changepoints.PERMUTATIONS,
            "points": len(values),
            "changes": [],
            "note": f"too few runs for change points ({len(values)}; at least "
            f"{2 * changepoints.MIN_SIZE})",
        }
    changes = []
    for c in found["changes"]:
        at = c["label"]
        i = next(k for k, p in enumerate(measured) if p.version == at)
        changes.append(
            c | {"version": at, "after_version": measured[i - 1].version if i else None,
                 "position": i}
        )  # fmt: skip
    return SeriesView(
        name=series.spec.name,
        status=series.status,
        measures=series.spec.describe(),
        metric=metric.key,
        metric_label=metric.label,
        higher_is_better=metric.higher_is_better,
        threshold=threshold,
        points=points,
        steps=steps,
        changes=changes,
        detection={k: v for k, v in found.items() if k != "changes"},
        bisections=list(series.extra.get("bisections", [])),
    )


def _point(
    p: VersionPoint,
    runs: list[RunRecord],
    value: Callable[[RunRecord], float | None],
    archive: RunReader | None,
) -> PointView:
    vals = [float(v) for v in map(value, runs) if v is not None]  # build kept runs with one
    out = PointView(
        version=p.version,
        status=p.status,
        source=p.source,
        reason=p.reason,
        env=p.env,
        role=p.role,
        runs=[r.id for r in runs if r.id is not None],
        values=vals,
        server_only=p.source == "maven",
        client_tools=dict(p.client_tools),
    )
    if vals:
        out.centre = stats.center(vals)
        b = stats.center_bounds(vals)
        out.lower, out.upper, out.confidence = b.lower, b.upper, b.confidence
        full = [  # the records whole (settings, host): the series holds light ones
            (archive.get_run(r.id) or r) if archive is not None and r.id is not None else r
            for r in runs
        ]
        last = full[-1]
        out.server_version = last.server_version
        out.pgbench_version = last.pgbench_version
        host: Mapping[str, Any] = last.host or {}  # older records named it differently
        out.host = next(
            (str(host[k]) for k in ("hostname", "host_name", "name") if host.get(k)), None
        )
        out.settings = settings_of(full)
        out.warnings = _warnings(runs)
        out.evidence = evidence(runs)
    return out


def settings_of(runs: list[RunRecord]) -> dict[str, str]:
    """The non-default settings the runs of one version ran with: a value every run had, or
    where they differ (an `env set` between runs) each value with its runs, "off (run 7) / on
    (runs 3, 5)", never the last run's value for all."""
    per_run = [
        {k: str(v.get("setting")) for k, v in r.non_default_settings().items()
         if k not in PER_ENVIRONMENT}
        for r in runs
    ]  # fmt: skip
    out: dict[str, str] = {}
    for name in sorted(set().union(*per_run)) if per_run else []:
        by_value: dict[str, list[str]] = {}
        for r, settings in zip(runs, per_run, strict=True):
            value = settings.get(name, "(default)")
            by_value.setdefault(value, []).append(str(r.id))
        if len(by_value) == 1:
            out[name] = next(iter(by_value))
        else:
            out[name] = " / ".join(
                f"{v} ({'run' if len(ids) == 1 else 'runs'} {', '.join(ids)})"
                for v, ids in by_value.items()
            )
    return out


def _warnings(runs: list[RunRecord]) -> list[str]:
    """One line per warning text: which runs said it. Runs that said the same kind of warning
    with their own figures (a busy host at 86%, 71%, 102%) each keep their own line: a group
    never shows one run's figure for another."""
    seen: dict[str, list[int | None]] = {}
    for r in runs:
        for w in r.warnings():
            seen.setdefault(str(w.get("message")), []).append(r.id)
    out = []
    for message, ids in seen.items():
        known = [str(i) for i in ids if i is not None]
        if len(known) > 1:
            out.append(f"runs {', '.join(known)}: {message}")
        else:
            out.append(f"run {known[0] if known else '?'}: {message}")
    return out


def _comparison(cmp: Comparison) -> dict[str, Any]:
    d = cmp.as_dict() | {"basis": cmp.basis()}
    keep = ("ratio", "lower", "upper", "verdict", "verdict_text", "description", "method",
            "n_baseline", "n_candidate", "reason", "insufficient", "text", "basis")  # fmt: skip
    return {k: d[k] for k in keep}


def check(series: Series, threshold: float, misrate: float = 0.05) -> dict[str, Any]:
    """The newest measured version against the one before it (the CI question)."""
    metric = METRICS[series.spec.metric]
    by_version: dict[str, list[RunRecord]] = {}
    for r in series.runs:
        if r.status == "ok" and r.study_point:
            by_version.setdefault(r.study_point, []).append(r)
    measured = [p.version for p in series.points if by_version.get(p.version)]
    if len(measured) < 2:
        return {
            "newest": measured[-1] if measured else None,
            "baseline": None,
            "regression": False,
            "verdict": None,
            "reason": "the series needs two measured versions for a check",
            "threshold": threshold,
        }
    base, new = measured[-2], measured[-1]
    cmp = compare_runs(by_version[base], by_version[new], metric.key, threshold, misrate)
    return {
        "newest": new,
        "baseline": base,
        "metric": metric.key,
        "threshold": threshold,
        "confidence": 1 - misrate,
        **_comparison(cmp),
        # confirmed: the 95% bounds were reached (2 vs 2 repeats only give 67%)
        "confirmed": cmp.verdict in ("faster", "slower") and not cmp.insufficient,
        "regression": cmp.verdict == "slower" and not cmp.insufficient,
    }
