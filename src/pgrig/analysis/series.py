"""Stability of one run's per-second series: noise, trend, change points, drift, warm-up.

Per-second values are autocorrelated, so this module describes a run (is it steady? did it
drift? how long was the warm-up?) rather than comparing configurations (see stats.compare).
Give it whole seconds of the measured window only (analysis/window.py): a partial second at an
edge looks like a collapse.

- CV: sample standard deviation / mean.
- Trend: least-squares slope in % of the mean per minute. Consecutive seconds are correlated,
  which makes the plain OLS standard error far too small: it is inflated by (1 + rho) / (1 - rho)
  for the lag-1 autocorrelation rho of the residuals (bias-corrected, plus one standard error),
  and the t-test uses the
  effective sample size n (1 - rho) / (1 + rho); below MIN_POINTS_DRIFT effective seconds no
  trend is called (p = 1).
- Change points: level shifts found by kernel change-point detection (ruptures, linear kernel =
  least squares, penalty 2 sigma^2 log n with sigma from the median absolute difference of
  consecutive seconds), each then tested the Hunter / Apache Otava way (a Welch t-test between
  the CHANGE_WINDOW = 50 seconds either side) with two changes for one run's correlated
  seconds: each side counts as its effective size n (1 - rho) / (1 + rho) (at least
  MIN_EFFECTIVE_SIDE), and the bar is p < CHANGE_P = 0.0001 rather than 0.001, because the
  tested points are the ones the search picked. A shift must also be at least MIN_SHIFT_PCT
  (2%). The weakest candidate is dropped until all pass.
- Drift is flagged when the run ends at a different level than it started, beyond chance and
  beyond DRIFT_PCT (5%): either the trend is significant (p < TREND_P, 0.001) and amounts to
  DRIFT_PCT or more across the window, or the level after the last change point differs from
  the level before the first one by DRIFT_PCT or more. Periodic dips (checkpoints) give change
  points but no drift. Last vs first fifth is reported as a description, not a test.
Drift needs at least MIN_POINTS_DRIFT (10) points.

Warm-up suggestion (a hint to check on the chart, not a measurement): the steady level is the
median of the second half; the warm-up ends at the centre of the first window (of
WARMUP_WINDOW_FRACTION of the run, at least 5 points) whose mean is within WARMUP_TOLERANCE_PCT
(5%) of that level. Searched only in the first half; None if not found there.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import cast

import numpy as np

from pgrig.analysis import student_t
from pgrig.errors import PgrigError
from pgrig.record.documents import StabilityDoc

DRIFT_PCT = 5.0
TREND_P = 0.001
CHANGE_P = 0.0001
CHANGE_WINDOW = 50
MIN_SEGMENT = 5
MIN_SHIFT_PCT = 2.0
MAX_RHO = 0.9
MIN_EFFECTIVE_SIDE = 2.0  # effectively independent seconds needed on each side of a shift
MIN_POINTS_DRIFT = 10
WARMUP_TOLERANCE_PCT = 5.0
WARMUP_WINDOW_FRACTION = 0.05
WARMUP_MIN_WINDOW = 5
MIN_POINTS_WARMUP = 20


@dataclass(frozen=True)
class ChangePoint:
    """A level shift: the series moves from `before` to `after` at time t."""

    t: float
    before: float  # mean of the segment before (at most CHANGE_WINDOW points)
    after: float  # mean of the segment after
    change_pct: float  # (after - before) / before, in %
    p: float  # two-sided p-value of the autocorrelation-adjusted Welch t-test

    def describe(self) -> str:
        return f"t={self.t:g}s {self.change_pct:+.1f}%"


@dataclass(frozen=True)
class Stability:
    """How steady one series was. Percentages are of the series mean unless said otherwise."""

    n: int
    duration: float  # seconds from the first to the last sample
    mean: float
    cv: float  # coefficient of variation: sample standard deviation / mean
    trend_pct_per_min: float  # least-squares slope, % of the mean per minute
    trend_se_pct_per_min: float  # its autocorrelation-adjusted standard error
    trend_p: float  # two-sided p-value of the slope
    first_fifth_mean: float
    last_fifth_mean: float
    first_last_change_pct: float  # (last fifth - first fifth) / first fifth, in %
    drift_flagged: bool
    reasons: list[str] = field(default_factory=list)
    change_points: list[ChangePoint] = field(default_factory=list)
    warmup_suggestion: float | None = None  # seconds to exclude from the start, if found

    @property
    def first_last_pct(self) -> float:
        """Alias of first_last_change_pct (the name reports/summary.py reads)."""
        return self.first_last_change_pct

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def as_record(self) -> StabilityDoc:
        """JSON-safe (NaN -> None): what a run keeps in RunRecord.extra["stability"]."""
        from pgrig.record.json_safe import json_safe

        return cast(StabilityDoc, json_safe(self.as_dict()))  # asdict: the fields above

    def describe(self) -> str:
        parts = [
            f"CV {self.cv * 100:.1f}%",
            f"trend {self.trend_pct_per_min:+.2f}%/min",
            f"last vs first fifth {self.first_last_change_pct:+.1f}%",
        ]
        text = ", ".join(p for p in parts if "nan" not in p)
        if self.change_points:
            text += ", change points " + ", ".join(c.describe() for c in self.change_points)
        if self.drift_flagged:
            text = "DRIFT: " + text
        if self.warmup_suggestion:
            text += f", suggested warm-up {self.warmup_suggestion:g} s"
        return text


def stability(
    t: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    drift_pct: float = DRIFT_PCT,
) -> Stability:
    """Describe a series y sampled at times t (seconds). Non-finite y values are dropped."""
    ta, ya = _series(t, y)
    n = ya.size
    duration = float(ta[-1] - ta[0]) if n else 0.0
    mean = float(ya.mean()) if n else math.nan
    cv = float(ya.std(ddof=1) / mean) if n >= 2 and mean != 0 else math.nan
    slope_pct, slope_se, slope_p = _trend(ta, ya, mean)
    k = max(1, n // 5)
    first = float(ya[:k].mean()) if n else math.nan
    last = float(ya[-k:].mean()) if n else math.nan
    change = (last - first) / first * 100 if n and first != 0 else math.nan

    reasons: list[str] = []
    points: list[ChangePoint] = []
    if n < MIN_POINTS_DRIFT:
        reasons.append(f"too few points for drift detection ({n} < {MIN_POINTS_DRIFT})")
    else:
        points = change_points(ta, ya)
        across = slope_pct * (n / 60.0) if math.isfinite(slope_pct) else math.nan
        if slope_p < TREND_P and abs(across) >= drift_pct:
            reasons.append(
                f"trend {slope_pct:+.2f}%/min, {across:+.1f}% across the window "
                f"(p={slope_p:.1g}, autocorrelation-robust)"
            )
        if points:
            shift = (points[-1].after - points[0].before) / points[0].before * 100
            if abs(shift) >= drift_pct:
                reasons.append(
                    f"level after t={points[-1].t:g}s differs by {shift:+.1f}% from the level "
                    f"before t={points[0].t:g}s"
                )

    return Stability(
        n=n,
        duration=duration,
        mean=mean,
        cv=cv,
        trend_pct_per_min=slope_pct,
        trend_se_pct_per_min=slope_se,
        trend_p=slope_p,
        first_fifth_mean=first,
        last_fifth_mean=last,
        first_last_change_pct=change,
        drift_flagged=n >= MIN_POINTS_DRIFT and bool(reasons),
        reasons=reasons,
        change_points=points,
        warmup_suggestion=warmup_suggestion(ta, ya),
    )


def change_points(
    t: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
) -> list[ChangePoint]:
    """Significant level shifts of y (see the module doc), in time order."""
    ta, ya = _series(t, y)
    n = ya.size
    if n < 2 * MIN_SEGMENT or np.ptp(ya) == 0:
        return []
    import ruptures

    diffs = np.diff(ya)
    sigma2 = (1.4826 * float(np.median(np.abs(diffs - np.median(diffs))))) ** 2 / 2
    sigma2 = max(sigma2, 1e-12 * float(np.mean(ya**2)))
    algo = ruptures.KernelCPD(kernel="linear", min_size=MIN_SEGMENT).fit(ya)
    cuts = [int(c) for c in algo.predict(pen=2 * sigma2 * math.log(n))[:-1]]
    while cuts:
        tests = _shift_tests(ya, cuts)
        worst = max(range(len(cuts)), key=lambda i: tests[i][2])
        before, after, p = tests[worst]
        if p >= CHANGE_P or abs(after - before) < abs(before) * MIN_SHIFT_PCT / 100:
            cuts.pop(worst)
            continue
        weak = [i for i, (b, a, _) in enumerate(tests) if abs(a - b) < abs(b) * MIN_SHIFT_PCT / 100]
        if weak:
            cuts.pop(weak[0])
            continue
        return [
            ChangePoint(float(ta[c]), b, a, (a - b) / b * 100 if b else math.nan, p)
            for c, (b, a, p) in zip(cuts, tests, strict=True)
        ]
    return []


def _shift_tests(y: np.ndarray, cuts: list[int]) -> list[tuple[float, float, float]]:
    """(mean before, mean after, p) of each cut against its neighbours, autocorrelation-aware."""
    edges = [0, *cuts, y.size]
    resid = np.concatenate([y[a:b] - y[a:b].mean() for a, b in itertools.pairwise(edges)])
    shrink = (1 - (rho := _lag1(resid, edges))) / (1 + rho)
    out = []
    for i, c in enumerate(cuts):
        left = y[max(edges[i], c - CHANGE_WINDOW) : c]
        right = y[c : min(edges[i + 2], c + CHANGE_WINDOW)]
        n1, n2 = left.size * shrink, right.size * shrink
        v1, v2 = left.var(ddof=1) / n1, right.var(ddof=1) / n2
        diff = float(right.mean() - left.mean())
        if min(n1, n2) < MIN_EFFECTIVE_SIDE:
            p = 1.0  # a side too correlated to say anything
        elif v1 + v2 == 0:
            p = 0.0 if diff else 1.0
        else:
            df = (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
            p = student_t.two_sided_p(diff / math.sqrt(v1 + v2), df)
        out.append((float(left.mean()), float(right.mean()), p))
    return out


def _lag1(resid: np.ndarray, edges: list[int]) -> float:
    """Lag-1 autocorrelation of the residuals within segments, on the safe side: residuals
    clipped at 3 robust standard deviations (a shift not yet cut out, or a dip, must not pass
    for correlation), corrected for the estimate's small-sample bias (Marriott and Pope:
    E[r] ~ rho - (1 + 4 rho) / n) plus one standard error (1 / sqrt(n)), so that a short run is
    not taken for more independent seconds than it has; clipped to [0, MAX_RHO]."""
    mad = 1.4826 * float(np.median(np.abs(resid - np.median(resid))))
    if mad > 0:
        resid = np.clip(resid, -3 * mad, 3 * mad)
    num = sum(float(resid[a + 1 : b] @ resid[a : b - 1]) for a, b in itertools.pairwise(edges))
    den = float(resid @ resid)
    if den <= 0:
        return 0.0
    r = num / den
    return min(MAX_RHO, max(0.0, r + (1 + 4 * r) / resid.size + 1 / math.sqrt(resid.size)))


def warmup_suggestion(
    t: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    tolerance_pct: float = WARMUP_TOLERANCE_PCT,
) -> float | None:
    """Seconds to exclude at the start so the rest is near the steady level (see module doc).

    0.0 when the run is steady from the start; None when there are too few points or no
    steady window appears in the first half (the run never settled: a longer run is needed).
    """
    ta, ya = _series(t, y)
    n = ya.size
    if n < MIN_POINTS_WARMUP:
        return None
    level = float(np.median(ya[n // 2 :]))
    if level == 0:
        return None
    w = max(WARMUP_MIN_WINDOW, int(n * WARMUP_WINDOW_FRACTION))
    means = np.convolve(ya, np.ones(w) / w, mode="valid")  # means[j] = mean(ya[j:j+w])
    centres = np.arange(means.size) + w // 2  # centred windows: less bias at a ramp's end
    close = np.abs(means - level) <= abs(level) * tolerance_pct / 100
    hits = np.flatnonzero(close & (centres < n // 2))
    if hits.size == 0:
        return None
    if hits[0] == 0:
        return 0.0  # already steady in the first window
    return float(ta[centres[hits[0]]] - ta[0])


def mean_over(
    t: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    t0: float,
    t1: float,
) -> float:
    """Mean of the samples with t0 <= t < t1 (NaN if there are none)."""
    if t1 < t0:
        raise PgrigError(f"empty window: t1 ({t1:g}) is before t0 ({t0:g})")
    ta, ya = _series(t, y)
    mask = (ta >= t0) & (ta < t1)
    return float(ya[mask].mean()) if mask.any() else math.nan


# --- helpers ---------------------------------------------------------------------------------
def _series(
    t: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Checked float arrays sorted by time, without non-finite samples (gaps in sampling)."""
    try:
        ta = np.asarray(t, dtype=float)
        ya = np.asarray(y, dtype=float)
    except (TypeError, ValueError) as e:
        raise PgrigError(f"series: expected numbers ({e})") from e
    if ta.ndim != 1 or ya.ndim != 1:
        raise PgrigError("series: t and y must be flat lists")
    if ta.size != ya.size:
        raise PgrigError(f"series: t has {ta.size} values but y has {ya.size}")
    keep = np.isfinite(ta) & np.isfinite(ya)
    ta, ya = ta[keep], ya[keep]
    order = np.argsort(ta, kind="stable")
    return ta[order], ya[order]


def _trend(ta: np.ndarray, ya: np.ndarray, mean: float) -> tuple[float, float, float]:
    """Least-squares slope and its standard error (both in % of the mean per minute), and the
    two-sided p-value, for AR(1) residuals: the variance is inflated by (1 + rho) / (1 - rho)
    and the degrees of freedom shrunk to the effective sample size."""
    n = ya.size
    if n < 3 or mean == 0 or not math.isfinite(mean):
        return math.nan, math.nan, math.nan
    tc = ta - ta.mean()
    sxx = float(tc @ tc)
    if sxx == 0:
        return math.nan, math.nan, math.nan
    slope = float(tc @ (ya - mean)) / sxx
    resid = ya - mean - slope * tc
    rho = _lag1(resid, [0, n])
    se = math.sqrt(float(resid @ resid) / (n - 2) / sxx * (1 + rho) / (1 - rho))
    scale = 60 * 100 / abs(mean)
    if se == 0:
        return slope * scale, 0.0, 0.0 if slope else 1.0
    n_eff = n * (1 - rho) / (1 + rho)
    if n_eff < MIN_POINTS_DRIFT:  # too few independent seconds to tell a trend from a wander
        return slope * scale, se * scale, 1.0
    p = student_t.two_sided_p(slope / se, n_eff - 2)
    return slope * scale, se * scale, p
