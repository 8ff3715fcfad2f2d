"""The one comparison engine: a candidate group of runs against a baseline group.

Every surface asks this module (`pgrig runs compare`, `pgrig report compare`, the study reports,
the web compare page), so the same runs give the same ratio, bounds and verdict everywhere.
A group is the runs of one configuration (one run, or repeats). The method follows from the
inputs, never from the caller:

- repeats: two or more runs on each side. One value per run (its TPS, NOPM, latency
  percentile); ratio = stats.ratio (Hodges-Lehmann: exp of the median of all pairwise
  differences of logarithms), bounds = stats.ratio_bounds (distribution-free, from the
  Mann-Whitney distribution). Repeats are the honest unit: each run has its own start-up,
  cache state and checkpoint phase.
- pairs: interleaved repeats whose pairing is known (the same study, matching repeat numbers,
  run in alternation: analysis/compare_paired.py). The ratio of each round's two runs removes
  the drift of the host between rounds; ratio = exp(mean log ratio), bounds from the paired t
  on log ratios. Used whenever the pairing is known (never chosen by which test decides);
  otherwise the unpaired repeats method.
- blocks (indicative): a single run on either side. Per-second values are autocorrelated (a
  checkpoint depresses many seconds in a row) and would make the bounds far too narrow. The
  means of blocks of at least BLOCK_S seconds are close to independent (batch means): each
  run's measured window (whole seconds at t >= 0) is cut into floor(span / BLOCK_S) equal
  blocks, at most MAX_BLOCKS, and the block means of a side's runs are its sample. Labelled
  "indicative" on every surface: one run cannot show run-to-run variation. A side with fewer
  than MIN_BLOCKS blocks (under 30 s measured) gets no verdict, and the reason says so.
- no verdict: a run that is not ok (failed, aborted, running: named with its status), a
  figure missing or not positive, a figure without per-second values compared on single runs.

Verdict at the practical threshold t (reference/measurement.md), on the ratio candidate /
baseline; for latency (lower is better) faster and slower swap:
  faster        lower bound > 1 + t
  slower        upper bound < 1 - t
  equivalent    1 - t <= lower <= 1 <= upper <= 1 + t: inside +/- t, and 1 inside the bounds
                (a detected change, however small, is never called equivalent)
  inconclusive  otherwise: the bounds cross 1 + t or 1 - t, or they exclude 1 while staying
                inside +/- t (a real change smaller than the threshold)

Repeats likely needed (inconclusive verdicts whose bounds cross a threshold): with d the
log-ratio, s the spread of a side's log values (Shamos / SHAMOS_NORMAL, a standard deviation
for normal data; the two sides pooled as sqrt((s_b^2 + s_c^2) / 2)) and m the distance from d
to the nearer of log(1 - t) and log(1 + t),
    n = ceil( pi/3 * 2 * ((z(1 - misrate/2) + z(POWER)) * s / m)^2 )
runs per side give bounds (half-width about z * s * sqrt(2/n) * sqrt(pi/3): the Hodges-Lehmann
shift's efficiency against the mean is 3/pi on normal data) that clear the threshold with
probability POWER (80%), if the observed effect and spread are the truth (somewhat less in
practice, about 70% in test_compare.py's simulation: the distribution-free bounds are
conservative, so they are wider than the normal approximation assumes). n is at least the
smallest size whose bounds reach the misrate (2 / C(2n, n) <= misrate) and one more than the
runs already there. For block comparisons the spread inside one run understates the spread
between runs, so n is a lower bound ("at least n").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from statistics import NormalDist
from typing import Literal

import numpy as np

from pgrig.analysis import compare_paired, stats
from pgrig.errors import PgrigError
from pgrig.record.documents import forced_when
from pgrig.record.figures import JUDGED, Figure
from pgrig.record.protocol import RunReader
from pgrig.record.run import SETTINGS_LAYERS, RunRecord

Verdict = Literal["faster", "slower", "equivalent", "inconclusive"]
Method = Literal["repeats", "pairs", "blocks"]
VERDICTS: tuple[Verdict, ...] = ("faster", "slower", "equivalent", "inconclusive")

DEFAULT_THRESHOLD = 0.02
DEFAULT_MISRATE = 0.05
BLOCK_S = 10.0  # shortest block whose mean counts as one sample of a single run
MAX_BLOCKS = 10  # per run: longer runs get longer blocks, not more of them
MIN_BLOCKS = 3  # per side: fewer give no verdict
MAX_RESOLVABLE_REPEATS = 100  # past this, "more than 100 repeats per side": not resolvable here
POWER = 0.8  # of the repeats estimate
SHAMOS_NORMAL = 0.9539  # Shamos spread of normal data / its standard deviation (sqrt(2) * 0.6745)
MAX_REPEATS = 1_000_000  # beyond this the estimate means "the effect sits on the threshold"


# The engine judges the figures the registry marks judged (record/figures.py: polarity, label,
# reader and per-second column are defined there once).
Metric = Figure
METRICS: dict[str, Metric] = JUDGED


@dataclass(frozen=True)
class Comparison:
    """Candidate vs baseline on one metric. ratio = candidate / baseline."""

    metric: str
    label: str
    higher_is_better: bool
    threshold: float
    misrate: float
    baseline_runs: tuple[int | None, ...]
    candidate_runs: tuple[int | None, ...]
    method: Method | None = None  # None: no statistics (see reason)
    ratio: float | None = None
    lower: float | None = None
    upper: float | None = None
    verdict: Verdict | None = None
    reason: str | None = None  # why there is no verdict (short)
    advice: str | None = None  # what would give one
    note: str | None = None  # what an inconclusive verdict means here
    caveat: str | None = None  # said above the verdict: the groups differ in workload
    n_baseline: int = 0  # values compared: runs (repeats) or blocks
    n_candidate: int = 0
    achieved_misrate: float | None = None
    p_value: float | None = None  # pairs: the paired t-test's two-sided p against no change
    insufficient: bool = False  # too few values for the misrate: the widest bounds
    repeats_needed: int | None = None  # per side, for inconclusive verdicts

    @property
    def indicative(self) -> bool:
        return self.method == "blocks"

    @property
    def paired(self) -> bool:
        return self.method == "pairs"

    @property
    def test(self) -> str:
        """The test behind the bounds, said with every verdict (pyperf: comparisons state
        their significance test)."""
        return {
            "repeats": "Mann-Whitney (unpaired)",
            "pairs": compare_paired.TEST_NAME,
            "blocks": "Mann-Whitney on block means",
        }.get(self.method or "", "")

    def ratio_text(self) -> str:
        """'x1.234 [1.011, 1.123]', 'x1.234' without bounds, '-' without a ratio."""
        return format_ratio(self.ratio, self.lower, self.upper)

    def verdict_text(self) -> str:
        """The verdict word with what qualifies it, or 'no verdict: <reason>'."""
        if self.verdict is None:
            return f"no verdict: {self.reason}"
        extra = ["indicative"] if self.indicative else ["paired"] if self.paired else []
        if self.verdict == "inconclusive":
            if self.note:
                extra.append(self.note)
            elif self.repeats_needed is not None:
                extra.append(self.repeats_text())
        return self.verdict + (f" ({'; '.join(extra)})" if extra else "")

    def at_its_level(self) -> Comparison:
        """This comparison with no firm verdict from bounds wider than its level: too few
        values for the misrate asked give the widest bounds, which hold less often (66.7%
        for 95%); a faster, slower or equivalent read from them becomes inconclusive, saying
        why. For the verdicts of studies and tuning studies, judged at the study's level."""
        if not self.insufficient or self.verdict in (None, "inconclusive"):
            return self
        held = _pct(1 - self.achieved_misrate) if self.achieved_misrate is not None else "?"
        return replace(
            self,
            verdict="inconclusive",
            note=(
                f"{self.verdict} only on {held} bounds, below the {_pct(1 - self.misrate)} "
                "asked: too few values, add repeats"
            ),
        )

    def repeats_text(self) -> str:
        """How many repeats would decide, bounded in words: past MAX_RESOLVABLE_REPEATS the
        estimate (resting on the observed effect and spread) is not a plan anyone can follow,
        and the effect is below what this setup resolves. Every surface says it through here."""
        n = self.repeats_needed
        if n is None:
            return ""
        if n > MAX_RESOLVABLE_REPEATS:
            return (
                f"more than {MAX_RESOLVABLE_REPEATS} repeats per side: below what this setup "
                "can resolve"
            )
        at = "at least" if self.indicative else "about"
        if self.paired:
            return f"{at} {n:,} interleaved pairs likely needed"
        return f"{at} {n:,} repeats per side likely needed"

    def basis(self) -> str:
        """What the bounds were computed from, e.g. '5 vs 5 repeats, 95% bounds'."""
        if self.method is None:
            return ""
        conf = _pct(1 - self.misrate)
        if self.method == "repeats":
            what = f"{self.n_baseline} vs {self.n_candidate} repeats"
        elif self.method == "pairs":
            what = f"{self.n_baseline} interleaved pairs"
        else:
            what = (
                f"single runs, {self.n_baseline} vs {self.n_candidate} blocks of >= {BLOCK_S:g} s"
            )
        bounds = f"{conf} bounds"
        if self.insufficient and self.achieved_misrate is not None:
            bounds = f"{_pct(1 - self.achieved_misrate)} bounds (too few values for {conf})"
        test = self.test
        if self.p_value is not None:
            test += f" (p = {self.p_value:.2g} against no change)"
        return f"{what}, {bounds}, {test}, threshold {_pct(self.threshold)}"

    def describe(self) -> str:
        """One line: 'x1.087 [1.061, 1.112] faster; 5 vs 5 repeats, 95% bounds, ...'."""
        head = (
            self.verdict_text()
            if self.ratio is None
            else f"{self.ratio_text()} {self.verdict_text()}"
        )
        parts = [head, self.basis(), self.advice or ""]
        text = "; ".join(p for p in parts if p)
        return f"{self.caveat}: {text}" if self.caveat else text

    def as_dict(self) -> dict[str, object]:
        return asdict(self) | {
            "indicative": self.indicative,
            "paired": self.paired,
            "test": self.test,
            "text": self.ratio_text(),
            "verdict_text": self.verdict_text(),
            "description": self.describe(),
        }


def format_ratio(
    ratio: float | None, lower: float | None = None, upper: float | None = None
) -> str:
    """The one way a ratio is printed: x1.234 [1.011, 1.123]."""
    if ratio is None or not math.isfinite(ratio):
        return "-"
    text = f"x{ratio:.3f}"
    if lower is not None and upper is not None:
        text += f" [{lower:.3f}, {upper:.3f}]"
    return text


def check_parameters(threshold: float, misrate: float) -> None:
    if not (math.isfinite(threshold) and 0 <= threshold < 1):
        raise PgrigError(f"--threshold {threshold:g} must be in [0, 1), e.g. 0.02 for 2%")
    if not (math.isfinite(misrate) and 0 < misrate < 1):
        raise PgrigError(f"--misrate {misrate:g} must be between 0 and 1, e.g. 0.05 for 95%")


# --- the engine ------------------------------------------------------------------------------
def compare_runs(
    baseline: Sequence[RunRecord],
    candidate: Sequence[RunRecord],
    metric: str = "tps",
    threshold: float = DEFAULT_THRESHOLD,
    misrate: float = DEFAULT_MISRATE,
) -> Comparison:
    """Candidate runs against baseline runs on `metric` (a key of METRICS)."""
    check_parameters(threshold, misrate)
    if not baseline or not candidate:
        raise PgrigError("a comparison needs at least one run on each side")
    m = METRICS[metric]
    out = Comparison(
        metric=m.key,
        label=m.label,
        higher_is_better=m.higher_is_better,
        threshold=threshold,
        misrate=misrate,
        baseline_runs=tuple(r.id for r in baseline),
        candidate_runs=tuple(r.id for r in candidate),
    )
    for which, group in (("baseline (A)", baseline), ("candidate (B)", candidate)):
        mixed = group_differences(group)
        if mixed:
            return replace(
                out,
                reason=f"the {which} runs are not repeats of one configuration: "
                + "; ".join(mixed),
                advice="group only runs of one workload, server version and settings",
            )
    out = replace(out, caveat=between_groups_caveat(baseline, candidate))
    not_ok = [r for r in (*baseline, *candidate) if r.status != "ok"]
    if not_ok:
        return replace(out, reason=_not_ok(not_ok), advice="only ok runs are compared")
    values = [[m.value(r) for r in side] for side in (baseline, candidate)]
    for side, vals in zip((baseline, candidate), values, strict=True):
        for r, v in zip(side, vals, strict=True):
            if v is None or not math.isfinite(v) or v <= 0:
                return replace(out, reason=f"run {r.id} has no {m.label}")
    b_vals, c_vals = (np.asarray(v, dtype=float) for v in values)
    out = replace(out, ratio=stats.center(c_vals) / stats.center(b_vals))
    changed = [r for r in (*baseline, *candidate) if changed_under_run(r)]
    if changed:
        return replace(
            out,
            reason=_changed(changed),
            advice="repeat the run without changing its environment under it (env set --force...)",
        )
    if len(baseline) >= 2 and len(candidate) >= 2:
        pairs = compare_paired.interleaved_pairs(baseline, candidate, misrate)
        if pairs is not None:
            b_pair, c_pair = (np.asarray([m.value(p[i]) for p in pairs], float) for i in (0, 1))
            return _decide_paired(out, b_pair, c_pair)
        return _decide(out, b_vals, c_vals, "repeats")
    if m.column is None:
        return replace(
            out,
            reason=f"no per-second {m.label} for single runs",
            advice="repeat the runs (2+ per side)",
        )
    samples, reason = _sides_blocks((baseline, candidate), m)
    if reason:
        advice = (
            f"an indicative verdict on single runs needs {MIN_BLOCKS * BLOCK_S:g} s of "
            f"per-second {m.label} ({MIN_BLOCKS} blocks of {BLOCK_S:g} s); repeat the runs "
            "(2+ per side) for a firm one"
        )
        return replace(out, reason=reason, advice=advice)
    return _decide(out, samples[0], samples[1], "blocks")


def compare_all(
    baseline: Sequence[RunRecord],
    candidate: Sequence[RunRecord],
    threshold: float = DEFAULT_THRESHOLD,
    misrate: float = DEFAULT_MISRATE,
) -> dict[str, Comparison]:
    """Every metric that any of the runs has, in METRICS order."""
    runs = (*baseline, *candidate)
    return {
        key: compare_runs(baseline, candidate, key, threshold, misrate)
        for key, m in METRICS.items()
        if any(m.value(r) is not None for r in runs)
    }


def group_value(
    runs: Sequence[RunRecord], value: Callable[[RunRecord], float | None]
) -> float | None:
    """A group's figure for tables: a single run's own value (whatever its status); for
    repeats the Hodges-Lehmann centre of the ok runs' values (None when none has one, and
    for a group mixing workloads: the centre of two different questions answers neither)."""
    if len(runs) == 1:
        return value(runs[0])
    if len({r.workload for r in runs}) > 1:
        return None
    vals = [v for v in (value(r) for r in runs if r.status == "ok") if v is not None]
    vals = [v for v in vals if math.isfinite(v)]
    if not vals:
        return None
    c = stats.center(vals)
    return int(c) if all(isinstance(v, int) for v in vals) and c.is_integer() else c


def study_point_groups(
    archive: RunReader, groups: Sequence[Sequence[RunRecord]]
) -> list[list[int]] | None:
    """When every group is a single study run whose point has two or more ok runs: the ids of
    those runs per group (what a firm verdict needs); else None. `archive`: an Archive."""
    if any(len(g) != 1 or not g[0].study or not g[0].study_point for g in groups):
        return None
    by_study: dict[str, list[RunRecord]] = {}
    out: list[list[int]] = []
    for (r,) in groups:
        assert r.study is not None
        if r.study not in by_study:
            by_study[r.study] = archive.study_runs(r.study)
        point = [
            s.id
            for s in by_study[r.study]
            if s.study_point == r.study_point and s.status == "ok" and s.id is not None
        ]
        if len(point) < 2 or any(set(point) & set(g) for g in out):
            return None
        out.append(point)
    return out


# What repeats share: a group mixing these is not one configuration measured again.
_SAME_IN_A_GROUP: tuple[tuple[str, str], ...] = (
    ("workload", "workload"),
    ("server_version", "server version"),
    ("scale", "scale"),
    ("clients", "clients"),
    ("threads", "threads"),
    ("via", "via"),
    ("protocol", "protocol"),
    ("rate", "rate"),
)
# Where a server is, not how it is configured: two environments alike differ in these.
_PLACE_SETTINGS = frozenset(
    {"port", "data_directory", "config_file", "hba_file", "ident_file", "cluster_name",
     "external_pid_file", "unix_socket_directories", "listen_addresses", "log_directory"}
)  # fmt: skip


# a run's configuration: the topology and the layers a person sets (not pgrig's own base and
# insights layers), in the one order (record/run.py)
_CONFIGURED_LAYERS = SETTINGS_LAYERS[SETTINGS_LAYERS.index("topology") :]
_USER_LAYERS = SETTINGS_LAYERS[SETTINGS_LAYERS.index("profile") :]


def configured_settings(rec: RunRecord) -> dict[str, str]:
    """The settings a run was configured with: its layers (topology < profile < environment
    < run, with the profile's and a per-run profile's names: the topology's sync mode is a
    configuration too), or for a server pgrig does not manage the non-default settings it
    reported."""
    layers = rec.settings_layers or {}
    if any(layers.get(k) for k in _USER_LAYERS):
        out: dict[str, str] = {}
        for key in _CONFIGURED_LAYERS:
            for name, value in (layers.get(key) or {}).items():
                name = {"__name__": "profile", "__profile__": "per-run profile"}.get(name, name)
                out[name] = str(value)
        return out
    return {
        n: str(v.get("setting"))
        for n, v in rec.non_default_settings().items()
        if n not in _PLACE_SETTINGS
    }


def group_differences(runs: Sequence[RunRecord]) -> list[str]:
    """What the runs of one group differ in (empty: they are repeats of one configuration),
    each as 'server version 15.10 (run 1) / 18.1 (runs 2, 3)'."""
    if len(runs) < 2:
        return []
    out = []
    for attr, label in _SAME_IN_A_GROUP:
        text = _split(runs, lambda r, a=attr: getattr(r, a))  # type: ignore[misc]
        if text:
            out.append(f"{label} {text}")
    configured = [configured_settings(r) for r in runs]
    names = sorted(set().union(*configured))
    differing = [n for n in names if len({c.get(n) for c in configured}) > 1]
    for name in differing[:3]:
        by_id = {r.id: c.get(name) for r, c in zip(runs, configured, strict=True)}
        out.append(f"setting {name} {_split(runs, lambda r, b=by_id: b[r.id])}")  # type: ignore[misc]
    if len(differing) > 3:
        out.append(f"and {len(differing) - 3} more settings")
    return out


def between_groups_caveat(
    baseline: Sequence[RunRecord], candidate: Sequence[RunRecord]
) -> str | None:
    """Two groups of different workloads: a ratio of two different questions, said first."""
    wa = {r.workload for r in baseline}
    wb = {r.workload for r in candidate}
    if len(wa) == 1 and len(wb) == 1 and wa != wb:
        return f"different workloads: A runs {next(iter(wa))}, B runs {next(iter(wb))}"
    return None


def _split(runs: Sequence[RunRecord], value: Callable[[RunRecord], object]) -> str:
    """'15.10 (run 1) / 18.1 (runs 2, 3)' when the runs disagree on `value`, else ''."""
    by: dict[str, list[str]] = {}
    for r in runs:
        v = value(r)
        by.setdefault("unset" if v is None else str(v), []).append(str(r.id))
    if len(by) < 2:
        return ""
    return " / ".join(
        f"{v} ({'run' if len(ids) == 1 else 'runs'} {', '.join(ids)})" for v, ids in by.items()
    )


def changed_under_run(rec: RunRecord) -> list[str]:
    """What was forced on a run's environment while it ran (load/core/run_steps.py
    forced_changes), in words: such a run measured two configurations, not the one it records."""
    events = rec.extra.get("changed_under_run") or []
    # before its start (while it took the environment): the run's own warning says it so too
    return [f"{e.get('change')} {forced_when(e.get('after_s', 0))}" for e in events]


def _changed(runs: Sequence[RunRecord]) -> str:
    listed = ", ".join(f"run {r.id} ({'; '.join(changed_under_run(r))})" for r in runs[:3])
    more = f" (and {len(runs) - 3} more)" if len(runs) > 3 else ""
    verb = "was" if len(runs) == 1 else "were"
    return f"{listed}{more} {verb} changed while running: not comparable as is"


def _not_ok(runs: Sequence[RunRecord]) -> str:
    listed = ", ".join(f"run {r.id} is {r.status}" for r in runs[:3])
    return listed + (f" (and {len(runs) - 3} more)" if len(runs) > 3 else "")


def _sides_blocks(
    sides: Sequence[Sequence[RunRecord]], m: Metric
) -> tuple[list[np.ndarray], str | None]:
    """The block means of each side's runs, or why there are too few (a reason for no verdict).

    Every run of both sides is looked at before any is named: the run a message names is the
    shortest of all the runs too short for a verdict (not the first side's), and the figure
    beside its id is that same run's measured time, the one its own record shows."""
    assert m.column is not None
    samples: list[np.ndarray] = []
    short: list[tuple[float, int, RunRecord, float]] = []  # (measured, order, run, span)
    for side in sides:
        blocks: list[float] = []
        spans: list[tuple[RunRecord, float]] = []
        for r in side:
            t, y = measured_seconds(r, m.column)
            means = block_means(t, y)
            if any(v <= 0 for v in means):
                return [], f"a {BLOCK_S:g} s block without {m.label} in run {r.id}"
            blocks.extend(means)
            spans.append((r, float(t.max() - t.min() + 1) if t.size else 0.0))
        if len(blocks) < MIN_BLOCKS:
            short.extend((_measured(r, span), len(short), r, span) for r, span in spans)
        samples.append(np.asarray(blocks, dtype=float))
    if not short:
        return samples, None
    measured, _, run, span = min(short, key=lambda s: (s[0], s[1]))
    figure = f"{_seconds(measured)} s"
    if span > 0 and span + 1 < measured:  # a gap in its per-second values: what blocks had
        figure += f" measured, {_seconds(span)} s of per-second {m.label}"
    elif span == 0 and measured >= MIN_BLOCKS * BLOCK_S:  # long enough, yet no series here
        figure += f" measured, no per-second {m.label}"
    return [], f"single runs under {MIN_BLOCKS * BLOCK_S:g} s (run {run.id}: {figure})"


def _measured(rec: RunRecord, span: float) -> float:
    """A run's measured time as its record says it (the per-second span when it says none)."""
    for v in (rec.measured_s, rec.duration_s):
        if v is not None and math.isfinite(v):
            return float(v)
    return span


def _seconds(v: float) -> str:
    """3.1, 2, 20: a tenth of a second at most, as the run's own summary shows it."""
    return f"{round(v, 1):g}"


def measured_seconds(rec: RunRecord, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(t, value) of the whole seconds of the measured window: t >= 0, and t + 1 no later than
    the measured time (a partial last second would count a fraction of a second's work)."""
    cols = rec.series.get("pgbench") or {}
    t_raw, y_raw = cols.get("t") or [], cols.get(column) or []
    n = min(len(t_raw), len(y_raw))
    t = np.asarray([np.nan if v is None else v for v in t_raw[:n]], dtype=float)
    y = np.asarray([np.nan if v is None else v for v in y_raw[:n]], dtype=float)
    keep = np.isfinite(t) & np.isfinite(y) & (t >= 0)
    end = rec.measured_s if rec.measured_s is not None else rec.duration_s
    if end is not None:
        keep &= t + 1 <= end + 0.5  # tolerance: the measured time is rarely a whole number
    return t[keep], y[keep]


def block_means(t: np.ndarray, y: np.ndarray) -> list[float]:
    """Means of floor(span / BLOCK_S) equal stretches of time (at most MAX_BLOCKS), each at
    least BLOCK_S long; a stretch without values (a gap in the series) is left out."""
    if t.size == 0:
        return []
    start = float(t.min())
    span = float(t.max()) - start + 1.0
    k = min(MAX_BLOCKS, int(span // BLOCK_S))
    if k == 0:
        return []
    which = np.minimum(k - 1, ((t - start) / (span / k)).astype(int))
    sums = np.bincount(which, weights=y, minlength=k)
    counts = np.bincount(which, minlength=k)
    return [float(sums[i] / counts[i]) for i in range(k) if counts[i]]


def _decide(out: Comparison, base: np.ndarray, cand: np.ndarray, method: Method) -> Comparison:
    b = stats.ratio_bounds(cand, base, out.misrate)
    out = replace(
        out,
        method=method,
        ratio=stats.ratio(cand, base),
        lower=b.lower,
        upper=b.upper,
        n_baseline=int(base.size),
        n_candidate=int(cand.size),
        achieved_misrate=b.achieved_misrate,
        insufficient=b.insufficient,
    )
    return _judge(
        out,
        lambda: repeats_needed(
            np.log(base), np.log(cand), out.threshold, out.misrate, max(base.size, cand.size)
        ),
    )


def _decide_paired(out: Comparison, base: np.ndarray, cand: np.ndarray) -> Comparison:
    b = compare_paired.paired_bounds(base, cand, out.misrate)
    out = replace(
        out,
        method="pairs",
        ratio=b.ratio,
        lower=b.lower,
        upper=b.upper,
        n_baseline=b.n,
        n_candidate=b.n,
        achieved_misrate=out.misrate,
        p_value=b.p_value,
    )
    return _judge(
        out, lambda: compare_paired.pairs_needed(b, out.threshold, out.misrate, POWER, b.n)
    )


def _judge(out: Comparison, needed: Callable[[], int | None]) -> Comparison:
    """The verdict on out's bounds; an inconclusive one says what it means or what would
    decide (`needed`: runs per side, or pairs, likely needed)."""
    assert out.lower is not None and out.upper is not None
    lower, upper = out.lower, out.upper
    verdict = decide(lower, upper, out.threshold, out.higher_is_better)
    out = replace(out, verdict=verdict)
    if verdict != "inconclusive":
        return out
    inside = 1 - out.threshold <= lower and upper <= 1 + out.threshold
    if inside and (lower > 1 or upper < 1):  # excludes 1, clears no threshold
        return replace(out, note=f"a real change smaller than the {_pct(out.threshold)} threshold")
    n = needed()
    if n is None:
        return replace(out, note="the effect sits on the threshold: repeats will hardly settle it")
    return replace(out, repeats_needed=n)


def decide(lower: float, upper: float, threshold: float, higher_is_better: bool = True) -> Verdict:
    """The four verdicts on bounds of candidate / baseline (see the module's docstring)."""
    up: Verdict = "faster" if higher_is_better else "slower"
    down: Verdict = "slower" if higher_is_better else "faster"
    if lower > 1 + threshold:
        return up
    if upper < 1 - threshold:
        return down
    if 1 - threshold <= lower <= 1 <= upper <= 1 + threshold:
        return "equivalent"
    return "inconclusive"


def repeats_needed(
    log_base: np.ndarray, log_cand: np.ndarray, threshold: float, misrate: float, have: int
) -> int | None:
    """Runs per side likely needed to decide (module docstring); None when the effect sits
    exactly on a threshold."""
    d = stats.shift(log_cand, log_base)
    sides = [stats.spread(x) / SHAMOS_NORMAL if x.size >= 2 else 0.0 for x in (log_base, log_cand)]
    s = math.sqrt((sides[0] ** 2 + sides[1] ** 2) / 2)
    m = min(abs(d - math.log1p(threshold)), abs(d - math.log1p(-threshold)))
    smallest = max(min_repeats(misrate), have + 1)
    if s == 0:
        return smallest
    if m == 0:
        return None
    z = NormalDist().inv_cdf(1 - misrate / 2) + NormalDist().inv_cdf(POWER)
    n = math.pi / 3 * 2 * (z * s / m) ** 2
    if n > MAX_REPEATS:
        return None
    return max(math.ceil(n), smallest)


def min_repeats(misrate: float) -> int:
    """The fewest runs per side whose distribution-free bounds reach `misrate`."""
    n = 2
    while 2 / math.comb(2 * n, n) > misrate:
        n += 1
    return n


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.3g}%"
